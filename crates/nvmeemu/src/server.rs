//! The NVMe/TCP target: one thread per TCP connection, each connection one
//! queue (the admin queue or an I/O queue, as its Connect says).
//!
//! A connection opens with ICReq / ICResp (no digests, controller data
//! alignment 0, H2CData PDUs up to [`MAX_H2C_DATA`]). Then each command
//! capsule is executed in arrival order: a host-to-controller command whose
//! data is not in the capsule gets an R2T for all of it and runs when the
//! last H2CData PDU is in (other capsules are taken meanwhile, as Linux
//! sends them); a controller-to-host command's data goes back in one
//! C2HData PDU before its response capsule. A command a fault holds is
//! never answered; the connection carries on with the next. A command a
//! fault delays has its PDUs sent by a thread of its own after the delay
//! (the connection's writes are serialised by a lock, so PDUs never
//! interleave), and is dropped quietly when the host has closed the
//! connection by then.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cmd::{Cqe, Sqe, Status};
use crate::ctrl::{Drive, Outcome};
use crate::fabrics::{self, Connect};
use crate::pdu::{fes, Pdu, PduError, PFV_1_0};

/// The largest H2CData PDU the host may send (ICResp MAXH2CDATA), bytes.
pub const MAX_H2C_DATA: u32 = 128 * 1024;

/// Serves connections from `listener` until it fails, one thread each.
pub fn serve(drive: Arc<Drive>, listener: TcpListener) -> std::io::Result<()> {
    for stream in listener.incoming() {
        let stream = stream?;
        let d = Arc::clone(&drive);
        std::thread::spawn(move || {
            let peer = stream
                .peer_addr()
                .map(|a| a.to_string())
                .unwrap_or_default();
            if let Err(e) = Connection::new(d, stream).and_then(|mut c| c.run()) {
                eprintln!("drivelab-nvmeemu: connection from {peer}: {e}");
            }
        });
    }
    Ok(())
}

/// Whether the command carries data from the host: opcode bits 1:0 = 01b,
/// or a Fabrics Connect.
fn host_to_controller(sqe: &Sqe) -> bool {
    if sqe.opcode() == fabrics::OPCODE {
        return sqe.fctype() == fabrics::fctype::CONNECT;
    }
    sqe.opcode() & 3 == 1
}

/// Whether the command returns data to the host: opcode bits 1:0 = 10b.
fn controller_to_host(sqe: &Sqe) -> bool {
    sqe.opcode() != fabrics::OPCODE && sqe.opcode() & 3 == 2
}

/// A write waiting for its H2CData.
struct Pending {
    sqe: Sqe,
    data: Vec<u8>,
    need: usize,
}

struct Connection {
    drive: Arc<Drive>,
    rd: BufReader<TcpStream>,
    wr: Arc<Mutex<TcpStream>>,
    qid: Option<u16>,
    sqsize: u16,
    sqhd: u16,
    pending: HashMap<u16, Pending>,
    next_ttag: u16,
}

impl Connection {
    fn new(drive: Arc<Drive>, stream: TcpStream) -> Result<Connection, PduError> {
        stream.set_nodelay(true)?;
        let wr = Arc::new(Mutex::new(stream.try_clone()?));
        Ok(Connection {
            drive,
            rd: BufReader::with_capacity(256 * 1024, stream),
            wr,
            qid: None,
            sqsize: 0,
            sqhd: 0,
            pending: HashMap::new(),
            next_ttag: 0,
        })
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), PduError> {
        let mut w = self.wr.lock().unwrap_or_else(|p| p.into_inner());
        w.write_all(bytes)?;
        Ok(())
    }

    /// Sends `bytes` after `after`, from a thread of its own; a write error
    /// then (the host gave up and closed the connection) is dropped.
    fn send_late(&self, bytes: Vec<u8>, after: Duration) {
        let wr = Arc::clone(&self.wr);
        std::thread::spawn(move || {
            std::thread::sleep(after);
            let mut w = wr.lock().unwrap_or_else(|p| p.into_inner());
            let _ = w.write_all(&bytes);
        });
    }

    /// Ends the connection with a C2HTermReq.
    fn terminate(&mut self, code: u16, why: String) -> PduError {
        let t = Pdu::TermReq {
            from_controller: true,
            fes: code,
            fei: 0,
        };
        let _ = self.send(&t.encode());
        PduError::Header {
            pdu_type: 0,
            what: why,
        }
    }

    fn run(&mut self) -> Result<(), PduError> {
        match Pdu::read_from(&mut self.rd)? {
            Pdu::IcReq { pfv: PFV_1_0, .. } => {
                let r = Pdu::IcResp {
                    pfv: PFV_1_0,
                    cpda: 0,
                    digest: 0,
                    maxh2cdata: MAX_H2C_DATA,
                };
                self.send(&r.encode())?;
            }
            other => {
                return Err(self.terminate(
                    fes::INVALID_PARAMETER,
                    format!("expected ICReq PFV 0, got {other:?}"),
                ))
            }
        }
        loop {
            let pdu = match Pdu::read_from(&mut self.rd) {
                Ok(p) => p,
                Err(PduError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    return Ok(())
                }
                Err(PduError::Io(e)) => return Err(PduError::Io(e)),
                Err(e) => return Err(self.terminate(fes::INVALID_HEADER, e.to_string())),
            };
            match pdu {
                Pdu::CapsuleCmd { sqe, data } => self.capsule(sqe, data)?,
                Pdu::H2CData {
                    ttag, datao, data, ..
                } => self.h2c_data(ttag, datao, data)?,
                Pdu::TermReq { .. } => return Ok(()),
                other => {
                    return Err(self.terminate(fes::SEQUENCE, format!("unexpected PDU {other:?}")))
                }
            }
        }
    }

    fn capsule(&mut self, sqe: Sqe, data: Vec<u8>) -> Result<(), PduError> {
        let need = sqe.data_len() as usize;
        if host_to_controller(&sqe) && need > data.len() {
            if !data.is_empty() || need as u64 > crate::io::MAX_TRANSFER.max(1024) {
                return self.respond(&sqe, Outcome::status(Status::INVALID_FIELD));
            }
            let ttag = self.next_ttag;
            self.next_ttag = self.next_ttag.wrapping_add(1);
            self.pending.insert(
                ttag,
                Pending {
                    sqe,
                    data: Vec::with_capacity(need),
                    need,
                },
            );
            let r2t = Pdu::R2T {
                cccid: sqe.cid(),
                ttag,
                r2to: 0,
                r2tl: need as u32,
            };
            return self.send(&r2t.encode());
        }
        self.command(sqe, data)
    }

    fn h2c_data(&mut self, ttag: u16, datao: u32, data: Vec<u8>) -> Result<(), PduError> {
        let (have, need) = match self.pending.get(&ttag) {
            Some(p) => (p.data.len(), p.need),
            None => {
                return Err(self.terminate(fes::SEQUENCE, format!("H2CData for unknown tag {ttag}")))
            }
        };
        if datao as usize != have || have + data.len() > need {
            return Err(self.terminate(
                fes::OUT_OF_RANGE,
                format!("H2CData at {datao} (+{}) of {need}", data.len()),
            ));
        }
        let complete = have + data.len() == need;
        if let Some(p) = self.pending.get_mut(&ttag) {
            p.data.extend_from_slice(&data);
        }
        if complete {
            if let Some(done) = self.pending.remove(&ttag) {
                return self.command(done.sqe, done.data);
            }
        }
        Ok(())
    }

    fn command(&mut self, sqe: Sqe, data: Vec<u8>) -> Result<(), PduError> {
        let is_connect =
            sqe.opcode() == fabrics::OPCODE && sqe.fctype() == fabrics::fctype::CONNECT;
        let out = match (self.qid, is_connect) {
            (None, true) => self.connect(&sqe, &data),
            (Some(_), true) | (None, false) => Outcome::status(Status::SEQUENCE),
            (Some(qid), false) => crate::dispatch::execute(&self.drive, qid, &sqe, &data),
        };
        self.respond(&sqe, out)
    }

    fn connect(&mut self, sqe: &Sqe, data: &[u8]) -> Outcome {
        let c = match Connect::parse(sqe, data) {
            Ok(c) => c,
            Err(s) => return Outcome::status(s),
        };
        let mut ctrl = self.drive.lock();
        match c.accept(&mut ctrl) {
            Ok(dw0) => {
                self.qid = Some(c.qid);
                self.sqsize = c.sqsize;
                self.drive.touch();
                Outcome::dw0(dw0)
            }
            Err(s) => Outcome::status(s),
        }
    }

    fn respond(&mut self, sqe: &Sqe, out: Outcome) -> Result<(), PduError> {
        match out {
            Outcome::Never => Ok(()),
            Outcome::Late { after, out } => {
                if let Some(bytes) = self.completion(sqe, *out) {
                    self.send_late(bytes, after);
                }
                Ok(())
            }
            done => match self.completion(sqe, done) {
                Some(bytes) => self.send(&bytes),
                None => Ok(()),
            },
        }
    }

    /// The PDUs that complete `sqe` with `out` (any C2HData, then the
    /// response capsule), the submission queue head advanced; `None` when
    /// it is not a completion.
    fn completion(&mut self, sqe: &Sqe, out: Outcome) -> Option<Vec<u8>> {
        let Outcome::Done {
            status,
            dw0,
            dw1,
            mut data,
        } = out
        else {
            return None;
        };
        self.sqhd = if self.sqsize == 0 {
            0
        } else {
            (self.sqhd + 1) % (self.sqsize + 1)
        };
        let mut bytes = Vec::new();
        let want = sqe.data_len() as usize;
        if status.is_success() && controller_to_host(sqe) && want > 0 {
            data.resize(want, 0);
            let c2h = Pdu::C2HData {
                cccid: sqe.cid(),
                datao: 0,
                last: true,
                success: false,
                data,
            };
            bytes = c2h.encode();
        }
        let resp = Pdu::CapsuleResp {
            cqe: Cqe {
                dw0,
                dw1,
                sqhd: self.sqhd,
                sqid: self.qid.unwrap_or(0),
                cid: sqe.cid(),
                status,
            },
        };
        bytes.extend_from_slice(&resp.encode());
        Some(bytes)
    }
}
