//! The model against the literature: under uniform random page writes at
//! steady state, measured write amplification is within 10 % of the
//! analytic value at three over-provisioning levels: FIFO/LRW cleaning
//! against Hu et al. SYSTOR 2009 / Desnoyers SYSTOR 2012, greedy against
//! the finite-block steady-state model (crate::analytic); greedy is below
//! the FIFO value, which bounds it.

use drivelab_ftlsim::wa::steady_state;
use drivelab_ftlsim::{FtlConfig, Policy};

fn cfg(op: f64, policy: Policy) -> FtlConfig {
    // 256 logical blocks of 64 pages: small enough for a debug build.
    let mut c = FtlConfig::new(256 * 64);
    c.over_provisioning = op;
    c.policy = policy;
    c
}

#[test]
fn write_amplification_matches_the_analytic_value_at_three_over_provisioning_levels() {
    println!("policy  OP    alpha   analytic  simulated  error%  fifo-analytic");
    for op in [0.1, 0.2, 0.3] {
        let fifo = steady_state(&cfg(op, Policy::Fifo), 4, 4, 1).unwrap();
        let greedy = steady_state(&cfg(op, Policy::Greedy), 4, 4, 1).unwrap();
        for (name, row) in [("fifo", &fifo), ("greedy", &greedy)] {
            println!(
                "{name:7} {:.2}  {:.4}  {:8.3}  {:9.3}  {:+6.2}  {:8.3}",
                row.over_provisioning,
                row.alpha,
                row.analytic,
                row.simulated,
                row.error_pct(),
                row.analytic_fifo
            );
            // Issue 14 asks for 10 %; the model meets 3 % (seeded: deterministic).
            assert!(
                row.error_pct().abs() < 3.0,
                "{name} at OP {op}: simulated {} vs analytic {}",
                row.simulated,
                row.analytic
            );
        }
        assert!(
            greedy.simulated < greedy.analytic_fifo,
            "greedy {} not below the FIFO value {} at OP {op}",
            greedy.simulated,
            greedy.analytic_fifo
        );
        assert!(
            greedy.simulated <= fifo.simulated * 1.01,
            "greedy {} above FIFO {} at OP {op}",
            greedy.simulated,
            fifo.simulated
        );
    }
}

#[test]
fn a_sequential_workload_has_no_amplification_where_random_has_much() {
    // Second route for the counting: rewriting in order invalidates whole
    // blocks, so whatever the policy, cleaning copies nothing (WA = 1).
    let mut f = drivelab_ftlsim::Ftl::new(cfg(0.1, Policy::Greedy)).unwrap();
    for _ in 0..3 {
        for l in 0..256 * 64 {
            f.write(l);
        }
    }
    assert_eq!(f.stats().write_amplification(), 1.0);
    let random = steady_state(&cfg(0.1, Policy::Greedy), 2, 1, 9).unwrap();
    assert!(random.simulated > 3.0, "{random:?}");
}
