//! Property tests: fill then verify round-trips for any pattern, block
//! size, LBA and buffer length, and any single corrupted byte is reported
//! at its block and offset.

use drivelab_patterns::{Generator, Pattern};
use proptest::prelude::*;

fn any_pattern() -> impl Strategy<Value = Pattern> {
    prop_oneof![
        (0..Pattern::all_named().len()).prop_map(|i| Pattern::all_named()[i].clone()),
        Just(Pattern::Stamped),
        proptest::collection::vec(any::<u8>(), 1..40).prop_map(Pattern::Fixed),
    ]
}

fn any_lba() -> impl Strategy<Value = u64> {
    prop_oneof![any::<u64>(), 0..1_000_000u64, (u64::MAX - 64)..=u64::MAX]
}

/// Cases per property: 256 natively; a few under Miri (tests/miri), which
/// checks the same code paths for undefined behaviour about 1000 times
/// slower.
const CASES: u32 = if cfg!(miri) { 4 } else { 256 };

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn fill_then_verify_round_trips(
        pattern in any_pattern(),
        block_size in 1usize..5000,
        blocks in 1usize..9,
        lba in any_lba(),
        seed in any::<u64>(),
        run in any::<u64>(),
        seq in any::<u64>(),
    ) {
        let block_size = if pattern == Pattern::Stamped { block_size.max(40) } else { block_size };
        let g = Generator::builder(pattern, block_size)
            .seed(seed).run_id(run).sequence(seq).build().unwrap();
        let mut buf = vec![0u8; block_size * blocks];
        g.fill(&mut buf, lba);
        prop_assert!(g.verify(&buf, lba).is_ok());
        let s = g.verify_all(&buf, lba, 4);
        prop_assert_eq!(s.blocks_checked, blocks as u64);
        prop_assert_eq!(s.blocks_failed, 0);
        // Each block alone, filled at its own LBA, is the same bytes.
        for (k, block) in buf.chunks(block_size).enumerate() {
            let mut one = vec![0u8; block_size];
            g.fill(&mut one, lba.wrapping_add(k as u64));
            prop_assert_eq!(&one[..], block);
        }
    }

    #[test]
    fn any_flipped_byte_is_found_where_it_is(
        pattern in any_pattern(),
        block_size in 1usize..3000,
        blocks in 1usize..6,
        lba in any_lba(),
        seed in any::<u64>(),
        pos in any::<proptest::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let block_size = if pattern == Pattern::Stamped { block_size.max(40) } else { block_size };
        let g = Generator::builder(pattern, block_size).seed(seed).build().unwrap();
        let mut buf = vec![0u8; block_size * blocks];
        g.fill(&mut buf, lba);
        let at = pos.index(buf.len());
        buf[at] ^= flip;
        let m = g.verify(&buf, lba).unwrap_err();
        prop_assert_eq!(m.buffer_offset, at);
        prop_assert_eq!(m.block_offset, at % block_size);
        prop_assert_eq!(m.lba, lba.wrapping_add((at / block_size) as u64));
        prop_assert_eq!(m.found()[0] ^ m.expected()[0], flip);
        let s = g.verify_all(&buf, lba, 10);
        prop_assert_eq!(s.blocks_failed, 1);
    }
}
