//! Errors of pattern parsing and generator construction.
//!
//! Every message says what the user typed wrong and what to type instead,
//! because these reach the user verbatim through the CLI (`--pattern`).

use std::path::PathBuf;

/// Names accepted by [`crate::Pattern`]'s `FromStr`, for error messages.
pub(crate) const VALID_NAMES: &str = "allzeros, allones, altzeroandone, altoneandzero, \
     incrementing, decrementing, random, walkingzeros, walkingones, \
     alt1and0thenalt0and1, alt0and1thenalt1and0, stamped, fixed:0xHEX, file:PATH";

/// Why a pattern name, a pattern's bytes or a generator's settings were
/// rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// The name is not one of the known patterns.
    #[error(
        "unknown data pattern `{name}`: use one of {VALID_NAMES} (names are case-insensitive)"
    )]
    UnknownName {
        /// What the user typed.
        name: String,
    },
    /// `fixed:` was given no hex digits.
    #[error("fixed pattern `{text}` has no bytes: write the bytes in hex after `fixed:`, e.g. fixed:0xDEADBEEF")]
    FixedEmpty {
        /// What the user typed.
        text: String,
    },
    /// `fixed:` has an odd number of hex digits, so the last byte is half.
    #[error("fixed pattern `{text}` has an odd number of hex digits ({digits}): give two digits per byte, e.g. fixed:0x0A0B rather than fixed:0xA0B")]
    FixedOddDigits {
        /// What the user typed.
        text: String,
        /// How many hex digits it has.
        digits: usize,
    },
    /// `fixed:` contains a character that is not a hex digit.
    #[error("fixed pattern `{text}` has `{found}` at character {position} (0-based, after `fixed:`), which is not a hex digit: use only 0-9 and A-F after an optional 0x")]
    FixedBadDigit {
        /// What the user typed.
        text: String,
        /// The offending character.
        found: char,
        /// Its index (in characters) after the `fixed:` prefix.
        position: usize,
    },
    /// `fixed:` is longer than [`crate::MAX_FIXED_BYTES`].
    #[error("fixed pattern has {len} bytes, more than the {max} allowed: use file:PATH for long patterns")]
    FixedTooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// `file:` was given without a path.
    #[error("file pattern has no path: write file:PATH, e.g. file:/tmp/pattern.bin")]
    FileNoPath,
    /// The pattern file could not be read.
    #[error(
        "cannot read pattern file {path}: {source}; check that the path exists and is readable"
    )]
    FileRead {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The pattern file is not a regular file, or not text where text is
    /// needed.
    #[error(transparent)]
    FileRefused(drivelab_device::input::InputError),
    /// The pattern file is empty.
    #[error("pattern file {path} is empty: give a file holding at least one byte")]
    FileEmpty {
        /// The file.
        path: PathBuf,
    },
    /// The pattern file is larger than [`crate::MAX_FILE_BYTES`].
    #[error("pattern file {path} is {size} bytes, more than the {max} bytes a pattern file may be: only the first block-size bytes are used per block, so cut it down (e.g. with `head -c`)")]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        max: u64,
    },
    /// A generator was asked for a zero block size.
    #[error("block size is 0: give the device's logical block size in bytes (e.g. 512 or 4096)")]
    ZeroBlockSize,
    /// The `stamped` pattern needs room for its header in every block.
    #[error("block size {block_size} is too small for the stamped pattern, whose header takes {min} bytes: use a block size of at least {min} bytes or another pattern")]
    BlockTooSmallForStamp {
        /// The block size asked for, in bytes.
        block_size: usize,
        /// The smallest block size `stamped` accepts, in bytes.
        min: usize,
    },
    /// A buffer is not a whole number of blocks.
    #[error("buffer of {len} bytes is not a whole number of {block_size}-byte blocks: make transfers a multiple of the block size")]
    PartialBlock {
        /// The buffer length in bytes.
        len: usize,
        /// The generator's block size in bytes.
        block_size: usize,
    },
}
