//! The kernel's own description of its types (`/sys/kernel/btf/vmlinux`,
//! BTF), read as far as the BPF recorder needs it: the byte offset of a
//! member in a struct (through anonymous structs and unions) and the
//! value of an enumerator. A raw-tracepoint program is handed the kernel's
//! `struct bio *` or `struct request *`, not the tracepoint's formatted
//! fields, so where `bi_sector` sits in this kernel's `struct bio` comes
//! from here, never from a header compiled elsewhere.
//!
//! Format: `include/uapi/linux/btf.h` (a header, then the type section:
//! one `btf_type` of 12 bytes per type, ids from 1, followed by data whose
//! length depends on the kind, then the string section).

use std::collections::HashMap;

const KIND_INT: u32 = 1;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_TYPEDEF: u32 = 8;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_DECL_TAG: u32 = 17;
const KIND_ENUM64: u32 = 19;

/// One type: kind, name, and where its extra data starts in the type
/// section.
#[derive(Debug, Clone, Copy)]
struct Type {
    kind: u32,
    name: u32,
    vlen: usize,
    kind_flag: bool,
    /// Offset of the 12-byte `btf_type` in the type section.
    at: usize,
}

/// A parsed BTF blob: types and strings, with the named structs and
/// enumerators indexed.
pub(crate) struct Btf {
    types: Vec<Type>,
    data: Vec<u8>,
    type_off: usize,
    str_off: usize,
    str_len: usize,
    structs: HashMap<String, u32>,
    enumerators: HashMap<String, i64>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

impl Btf {
    /// The running kernel's BTF, `None` when absent or unreadable.
    pub(crate) fn vmlinux() -> Option<Btf> {
        Btf::parse(std::fs::read("/sys/kernel/btf/vmlinux").ok()?)
    }

    /// Parse a little-endian BTF blob; `None` if it is not one.
    pub(crate) fn parse(data: Vec<u8>) -> Option<Btf> {
        if data.get(..2)? != [0x9f, 0xeb] {
            return None;
        }
        let hdr_len = u32_at(&data, 4)? as usize;
        let type_off = hdr_len + u32_at(&data, 8)? as usize;
        let type_len = u32_at(&data, 12)? as usize;
        let str_off = hdr_len + u32_at(&data, 16)? as usize;
        let str_len = u32_at(&data, 20)? as usize;
        if data.len() < type_off + type_len || data.len() < str_off + str_len {
            return None;
        }
        let mut btf = Btf {
            // Type id 0 is `void`.
            types: vec![Type {
                kind: 0,
                name: 0,
                vlen: 0,
                kind_flag: false,
                at: 0,
            }],
            data,
            type_off,
            str_off,
            str_len,
            structs: HashMap::new(),
            enumerators: HashMap::new(),
        };
        let mut at = 0;
        while at + 12 <= type_len {
            let name = u32_at(&btf.data, type_off + at)?;
            let info = u32_at(&btf.data, type_off + at + 4)?;
            let t = Type {
                kind: (info >> 24) & 0x1f,
                name,
                vlen: (info & 0xffff) as usize,
                kind_flag: info >> 31 != 0,
                at,
            };
            let extra = match t.kind {
                KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
                KIND_ARRAY => 12,
                KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * t.vlen,
                KIND_ENUM | KIND_FUNC_PROTO => 8 * t.vlen,
                _ => 0,
            };
            btf.types.push(t);
            at += 12 + extra;
        }
        for id in 1..btf.types.len() {
            let t = btf.types[id];
            match t.kind {
                KIND_STRUCT | KIND_UNION if t.name != 0 => {
                    let n = btf.str(t.name)?.to_string();
                    btf.structs.entry(n).or_insert(id as u32);
                }
                KIND_ENUM | KIND_ENUM64 => {
                    let w = if t.kind == KIND_ENUM { 8 } else { 12 };
                    for i in 0..t.vlen {
                        let e = btf.type_off + t.at + 12 + w * i;
                        let name = btf.str(u32_at(&btf.data, e)?)?.to_string();
                        let lo = u32_at(&btf.data, e + 4)?;
                        let v = if t.kind == KIND_ENUM {
                            i64::from(lo as i32)
                        } else {
                            (i64::from(u32_at(&btf.data, e + 8)?) << 32) | i64::from(lo)
                        };
                        btf.enumerators.entry(name).or_insert(v);
                    }
                }
                _ => {}
            }
        }
        Some(btf)
    }

    fn str(&self, off: u32) -> Option<&str> {
        let off = off as usize;
        if off >= self.str_len {
            return None;
        }
        let s = &self.data[self.str_off + off..self.str_off + self.str_len];
        let end = s.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&s[..end]).ok()
    }

    /// The id of the typedef `name` (e.g. `btf_trace_block_bio_queue`,
    /// the type a `tp_btf` program attaches to).
    pub(crate) fn typedef(&self, name: &str) -> Option<u32> {
        (1..self.types.len())
            .find(|&id| {
                let t = self.types[id];
                t.kind == KIND_TYPEDEF && self.str(t.name) == Some(name)
            })
            .map(|id| id as u32)
    }

    /// The value of the enumerator `name` (e.g. `__REQ_FUA`).
    pub(crate) fn enumerator(&self, name: &str) -> Option<i64> {
        self.enumerators.get(name).copied()
    }

    /// Byte offset of `member` in `struct name`, looked for through the
    /// struct's anonymous struct and union members. `None` for a missing
    /// struct or member, or a bit field.
    pub(crate) fn offset(&self, name: &str, member: &str) -> Option<usize> {
        let id = *self.structs.get(name)?;
        self.member_bits(id, member, 0).map(|b| (b / 8) as usize)
    }

    fn member_bits(&self, id: u32, member: &str, depth: u32) -> Option<u64> {
        let t = *self.types.get(id as usize)?;
        if !matches!(t.kind, KIND_STRUCT | KIND_UNION) || depth > 8 {
            return None;
        }
        for i in 0..t.vlen {
            let m = self.type_off + t.at + 12 + 12 * i;
            let name = u32_at(&self.data, m)?;
            let ty = u32_at(&self.data, m + 4)?;
            let raw = u32_at(&self.data, m + 8)?;
            let (bits, bitfield) = if t.kind_flag {
                (u64::from(raw & 0xff_ffff), raw >> 24 != 0)
            } else {
                (u64::from(raw), false)
            };
            if name == 0 {
                let inner = self.skip_modifiers(ty);
                if let Some(b) = self.member_bits(inner, member, depth + 1) {
                    return Some(bits + b);
                }
            } else if self.str(name)? == member {
                return (!bitfield && bits % 8 == 0).then_some(bits);
            }
        }
        None
    }

    /// Through typedefs and const/volatile/restrict/type tags to the type
    /// they name.
    fn skip_modifiers(&self, mut id: u32) -> u32 {
        for _ in 0..16 {
            match self.types.get(id as usize) {
                Some(t) if matches!(t.kind, 8..=11 | 18) => {
                    id = u32_at(&self.data, self.type_off + t.at + 8).unwrap_or(0);
                }
                _ => break,
            }
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF blob with `struct s { int a; union { long b; int c; }; }` and
    /// `enum e { X = 5 }`, built by hand.
    fn blob() -> Vec<u8> {
        let strs = b"\0int\0s\0a\0b\0c\0e\0X\0long\0";
        let name = |s: &str| -> u32 {
            let pos = strs
                .windows(s.len() + 2)
                .position(|w| w[0] == 0 && &w[1..=s.len()] == s.as_bytes() && w[s.len() + 1] == 0)
                .unwrap();
            pos as u32 + 1
        };
        let mut t = Vec::new();
        let mut w = |v: &[u32]| v.iter().for_each(|x| t.extend_from_slice(&x.to_le_bytes()));
        // 1: int
        w(&[name("int"), KIND_INT << 24, 4, 32]);
        // 2: long
        w(&[name("long"), KIND_INT << 24, 8, 64]);
        // 3: anonymous union { long b; int c; }
        w(&[0, (KIND_UNION << 24) | 2, 8]);
        w(&[name("b"), 2, 0, name("c"), 1, 0]);
        // 4: struct s { int a; <anon union> at 64 bits; }
        w(&[name("s"), (KIND_STRUCT << 24) | 2, 16]);
        w(&[name("a"), 1, 0, 0, 3, 64]);
        // 5: enum e { X = 5 }
        w(&[name("e"), (KIND_ENUM << 24) | 1, 4]);
        w(&[name("X"), 5]);
        let mut b = vec![0x9f, 0xeb, 1, 0];
        for v in [24u32, 0, t.len() as u32, t.len() as u32, strs.len() as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&t);
        b.extend_from_slice(strs);
        b
    }

    #[test]
    fn members_are_found_through_anonymous_unions() {
        let btf = Btf::parse(blob()).unwrap();
        assert_eq!(btf.offset("s", "a"), Some(0));
        assert_eq!(btf.offset("s", "b"), Some(8));
        assert_eq!(btf.offset("s", "c"), Some(8));
        assert_eq!(btf.offset("s", "d"), None);
        assert_eq!(btf.offset("t", "a"), None);
        assert_eq!(btf.enumerator("X"), Some(5));
        assert!(Btf::parse(vec![0; 24]).is_none());
    }

    #[test]
    fn the_running_kernels_block_structs_are_described() {
        let Some(btf) = Btf::vmlinux() else { return };
        for (s, m) in [
            ("bio", "bi_iter"),
            ("bio", "bi_opf"),
            ("bio", "bi_bdev"),
            ("bvec_iter", "bi_sector"),
            ("bvec_iter", "bi_size"),
            ("block_device", "bd_disk"),
            ("gendisk", "major"),
            ("gendisk", "first_minor"),
            ("request", "q"),
            ("request", "__sector"),
            ("request", "__data_len"),
            ("request", "cmd_flags"),
            ("request_queue", "disk"),
        ] {
            assert!(btf.offset(s, m).is_some(), "struct {s} member {m}");
        }
        assert_eq!(btf.enumerator("REQ_OP_WRITE"), Some(1));
        assert!(btf.typedef("btf_trace_block_bio_queue").is_some());
        assert!(btf.typedef("btf_trace_no_such_event").is_none());
    }
}
