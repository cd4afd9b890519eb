//! fio's engine fronts as a job sees them: each file holds one engine's (or
//! one shared block's) options, keys, the checks made before anything is
//! written, and how the job opens its target. The engines that move no
//! device blocks are under [`noio`].

pub mod e4defrag;
pub mod files;
pub mod front;
pub mod fronts;
pub mod noio;
pub mod opts;
pub mod registry;
pub mod sg;
pub mod ucmd;
