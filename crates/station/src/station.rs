//! The station's main loop: one slot per drive seen, a worker thread per
//! drive, and one loop that takes every message (kernel events, workers'
//! changes and results, operator commands, keys), checks every quarter
//! second that each drive being worked on is still there, and draws the
//! screen or writes the events. A drive that arrives while a worker still
//! has it (reseated before its old worker ended) waits, and is taken once
//! that worker has ended. The loop never waits on a drive.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use drivelab_device::blockdev::BlockDevice;

use crate::drive::state::{Control, State, View};
use crate::drive::worker::{self, Ctx, Worker};
use crate::events::{Events, Sink, StationRecord};
use crate::msg::{Command, Msg};
use crate::screen::Screen;
use crate::watch::{self, Identity, Seen};
use crate::StationError;

/// How the station shows itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ui {
    /// The terminal screen (keys on it).
    Screen,
    /// JSON lines on stdout (commands on stdin).
    Events,
}

/// How long quitting waits for the workers to stop before leaving them
/// (a drive hung in a command must not keep the station from exiting;
/// its journal stays).
const QUIT_WAIT: Duration = Duration::from_secs(60);

/// Every how many refreshes (of 250 ms) a busy drive is described again
/// whole to tell it is still there, rather than from its device numbers,
/// size and loop fields alone: 5 s.
const WHOLE_EVERY: u64 = 20;

/// The most lines a drive's log keeps (the oldest go first).
const LOG_LINES: usize = 500;

/// A drive's state change as its log shows it: "HH:MM:SS state: detail".
fn log_line(v: &View) -> String {
    let (s, n) = drivelab_erase::clock::unix_now();
    let t = drivelab_erase::clock::rfc3339(s, n);
    let hms = t.get(11..19).unwrap_or(&t);
    if v.detail.is_empty() {
        format!("{hms} {}", v.state.word())
    } else {
        format!("{hms} {}: {}", v.state.word(), v.detail)
    }
}

/// One drive the station has seen.
struct Slot {
    view: Arc<Mutex<View>>,
    /// Its state changes, one line each ("HH:MM:SS state: detail"), for
    /// the screen's log of the drive.
    log: Vec<String>,
    control: Arc<Control>,
    identity: Arc<Mutex<Option<Identity>>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Slot {
    fn view(&self) -> View {
        match self.view.lock() {
            Ok(v) => v.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// The drive's state (without copying its row).
    fn state(&self) -> State {
        match self.view.lock() {
            Ok(v) => v.state,
            Err(p) => p.into_inner().state,
        }
    }

    /// The drive's identity once its worker identified it.
    fn identity(&self) -> Option<Identity> {
        self.identity.lock().ok().and_then(|g| g.clone())
    }

    /// Whether its worker thread is still running (it may hold the
    /// drive's claim, its journal, or be about to write its result).
    fn running(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| !h.is_finished())
    }
}

/// What a disk that arrived gets.
enum Take {
    /// A worker of its own.
    Add(Box<BlockDevice>),
    /// To wait until the worker of this drive (kernel name) has ended.
    Wait(String),
    /// Nothing: not shown, or the drive a worker has or had.
    Nothing,
}

/// The running station.
struct Station<'a> {
    ctx: Arc<Ctx>,
    slots: BTreeMap<String, Slot>,
    tx: Sender<Msg>,
    events: Events,
    sink: &'a mut dyn Sink,
    stored: usize,
    /// The last store warning, for the screen's message line.
    warning: Option<String>,
    /// Drives arrived while a worker still had them (kernel name -> the
    /// worker's drive's name), taken once that worker has ended.
    waiting: BTreeMap<String, String>,
    /// Refreshes so far (every [`WHOLE_EVERY`]th checks drives whole).
    refreshes: u64,
}

/// Run the station until the operator quits (a key, `quit` on stdin, or
/// `stop` set by a signal). Workers' failures are their drives' states;
/// an error here is the station's own (no uevent socket, no terminal).
pub fn run(ctx: Ctx, ui: Ui, stop: &AtomicBool, sink: &mut dyn Sink) -> Result<(), StationError> {
    let (tx, rx) = mpsc::channel();
    let listening = Arc::new(AtomicBool::new(false));
    let stop_listen = Arc::new(AtomicBool::new(false));
    let t = tx.clone();
    let l = listening.clone();
    let listener = watch::listen(stop_listen.clone(), move |s| {
        l.store(true, Ordering::Relaxed);
        let _ = t.send(Msg::Seen(s));
    })
    .map_err(StationError::Uevent)?;
    let mut screen = match ui {
        Ui::Screen => Some(Screen::start(tx.clone()).map_err(StationError::Terminal)?),
        Ui::Events => {
            spawn_stdin(tx.clone());
            None
        }
    };
    let mut st = Station {
        ctx: Arc::new(ctx),
        slots: BTreeMap::new(),
        tx,
        events: Events::new(ui == Ui::Events),
        sink,
        stored: 0,
        warning: None,
        waiting: BTreeMap::new(),
        refreshes: 0,
    };
    st.events.emit(
        "start",
        json!({"bays": st.ctx.policy.bays, "policy": st.ctx.policy_path,
               "operator": st.ctx.policy.operator, "include_loop": st.ctx.policy.include_loop}),
    );
    for dev in watch::present(st.ctx.policy.include_loop) {
        st.add(&dev);
    }
    let r = st.main_loop(&rx, stop, &mut screen);
    drop(screen);
    st.quit(&rx);
    stop_listen.store(true, Ordering::Relaxed);
    let _ = listener.join();
    r
}

/// Read control lines from stdin (events mode) until it closes.
fn spawn_stdin(tx: Sender<Msg>) {
    std::thread::spawn(move || {
        let mut line = String::new();
        loop {
            line.clear();
            match std::io::stdin().read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line.trim().is_empty() => {}
                Ok(_) => match Command::parse(&line) {
                    Ok(c) => {
                        if tx.send(Msg::Command(c)).is_err() {
                            return;
                        }
                    }
                    Err(e) => eprintln!("drivelab: station: {e}"),
                },
            }
        }
    });
}

impl Station<'_> {
    fn main_loop(
        &mut self,
        rx: &Receiver<Msg>,
        stop: &AtomicBool,
        screen: &mut Option<Screen>,
    ) -> Result<(), StationError> {
        let mut last_check = Instant::now();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            match rx.recv_timeout(Duration::from_millis(250)) {
                Ok(Msg::Seen(s)) => self.seen(s),
                Ok(Msg::Changed { view, progress }) => {
                    self.events
                        .drive(if progress { "progress" } else { "state" }, &view);
                    if let (false, Some(slot)) = (progress, self.slots.get_mut(&view.name)) {
                        if slot.log.len() >= LOG_LINES {
                            slot.log.remove(0);
                        }
                        slot.log.push(log_line(&view));
                    }
                }
                Ok(Msg::Result(r)) => self.store(&r),
                Ok(Msg::Command(Command::Quit)) => return Ok(()),
                Ok(Msg::Command(c)) => {
                    if let Err(e) = self.command(&c) {
                        self.tell(screen, &e);
                    }
                }
                Ok(Msg::Key(k)) => {
                    let rows = self.rows();
                    let busy = rows.iter().any(|v| v.state.is_busy());
                    if let Some(s) = screen.as_mut() {
                        match s.key(k, &rows, busy) {
                            Some(Command::Quit) => return Ok(()),
                            Some(c) => {
                                if let Err(e) = self.command(&c) {
                                    s.message = e;
                                }
                            }
                            None => {}
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            if last_check.elapsed() >= Duration::from_millis(250) {
                self.check_present();
                self.retry_waiting();
                last_check = Instant::now();
                let rows = if screen.is_some() || self.sink.observes() {
                    self.rows()
                } else {
                    Vec::new()
                };
                if self.sink.observes() {
                    self.sink.observe(&rows);
                }
                if let Some(s) = screen.as_mut() {
                    if let Some(w) = self.warning.take() {
                        s.message = w;
                    }
                    let log = s
                        .selected(&rows)
                        .and_then(|v| self.slots.get(&v.name))
                        .map(|slot| slot.log.as_slice())
                        .unwrap_or_default();
                    s.draw(&rows, &self.ctx.policy.bays, self.stored, log);
                }
            }
        }
    }

    fn tell(&self, screen: &mut Option<Screen>, e: &str) {
        match screen {
            Some(s) => s.message = e.to_string(),
            None => eprintln!("drivelab: station: {e}"),
        }
    }

    fn rows(&self) -> Vec<View> {
        self.slots.values().map(Slot::view).collect()
    }

    /// Start a worker for a drive just seen.
    fn add(&mut self, dev: &BlockDevice) {
        let view = Arc::new(Mutex::new(View::detected(&dev.name, dev.path.clone())));
        let control = Arc::new(Control::default());
        let identity = Arc::new(Mutex::new(None));
        let w = Worker {
            name: dev.name.clone(),
            view: view.clone(),
            control: control.clone(),
            ctx: self.ctx.clone(),
            tx: self.tx.clone(),
            identity: identity.clone(),
        };
        self.events
            .drive("state", &View::detected(&dev.name, dev.path.clone()));
        let handle = std::thread::Builder::new()
            .name(format!("station {}", dev.name))
            .spawn(move || worker::run(&w))
            .ok();
        self.slots.insert(
            dev.name.clone(),
            Slot {
                view,
                log: vec![log_line(&View::detected(&dev.name, dev.path.clone()))],
                control,
                identity,
                handle,
            },
        );
    }

    /// A kernel event about a whole disk.
    fn seen(&mut self, s: Seen) {
        match s {
            Seen::Removed(name) => {
                self.waiting.remove(&name);
                if let Some(slot) = self.slots.get(&name) {
                    slot.control.stop_for(&slot.control.removed);
                }
            }
            Seen::Changed(name) => self.arrived(&name),
        }
    }

    /// A whole disk added or changed at `name`: taken, kept waiting, or
    /// nothing to do (see [`Station::take`]).
    fn arrived(&mut self, name: &str) {
        match self.take(name) {
            Take::Add(dev) => {
                self.waiting.remove(name);
                self.add(&dev);
            }
            Take::Wait(behind) => self.wait(name, &behind),
            Take::Nothing => {
                self.waiting.remove(name);
            }
        }
    }

    /// What to do with the disk at `name`. A drive no worker has gets a
    /// worker of its own. A drive that a worker still has waits until that
    /// worker has ended, and is then taken as if it had just arrived: the
    /// worker of its node (its drive pulled, or another drive there now),
    /// or the worker of the same drive at another node (its serial, or a
    /// loop device's backing file: a drive reseated while its old worker
    /// is still stopping). So there are never two workers on one drive,
    /// and the old worker's claim and journal are let go before the new
    /// worker looks at the drive.
    fn take(&self, name: &str) -> Take {
        let dev = match BlockDevice::from_name(name) {
            Ok(d)
                if !d.partition
                    && d.size.0 > 0
                    && watch::is_shown(d.kind, self.ctx.policy.include_loop) =>
            {
                d
            }
            _ => return Take::Nothing,
        };
        let id = Identity::of(&dev);
        if let Some(slot) = self.slots.get(name) {
            let pulled = Control::is(&slot.control.removed);
            let theirs = slot.identity();
            let same = theirs.as_ref() == Some(&id);
            if slot.running() {
                // An event about the drive being worked on (or identified).
                if !pulled && (same || theirs.is_none()) {
                    return Take::Nothing;
                }
                return Take::Wait(name.to_string());
            }
            // An event about the drive the slot was done with.
            if !pulled && same {
                return Take::Nothing;
            }
        }
        let busy = self.slots.iter().find(|(n, s)| {
            n.as_str() != name && s.running() && s.identity().is_some_and(|o| o.same_drive(&id))
        });
        match busy {
            Some((other, _)) => Take::Wait(other.clone()),
            None => Take::Add(Box::new(dev)),
        }
    }

    /// Keep `name` waiting for the worker of `behind` (said once).
    fn wait(&mut self, name: &str, behind: &str) {
        if let Some(b) = self.waiting.get_mut(name) {
            *b = behind.to_string();
            return;
        }
        self.waiting.insert(name.to_string(), behind.to_string());
        self.events.emit(
            "queued",
            json!({"name": name, "device": format!("/dev/{name}"), "behind": behind,
                   "detail": format!("waits until the worker of {behind} has ended")}),
        );
    }

    /// Look again at every waiting drive whose old worker has ended.
    fn retry_waiting(&mut self) {
        let names: Vec<String> = self
            .waiting
            .iter()
            .filter(|(_, behind)| self.slots.get(*behind).is_none_or(|s| !s.running()))
            .map(|(n, _)| n.clone())
            .collect();
        for n in names {
            self.arrived(&n);
        }
    }

    /// Every drive being worked on that is no longer the same drive was
    /// pulled: stop its worker. Each refresh reads the few sysfs files
    /// that tell a drive gone ([`Identity::still`]); every
    /// [`WHOLE_EVERY`]th, the drive is described again whole (a swap at
    /// the same node whose events were lost).
    fn check_present(&mut self) {
        self.refreshes = self.refreshes.wrapping_add(1);
        let whole = self.refreshes % WHOLE_EVERY == 0;
        for (name, slot) in &self.slots {
            if Control::is(&slot.control.removed) || slot.state().is_final() {
                continue;
            }
            let gone = slot.identity().is_some_and(|id| {
                if whole {
                    !id.still_whole(name)
                } else {
                    !id.still(name)
                }
            });
            if gone {
                slot.control.stop_for(&slot.control.removed);
            }
        }
        self.stop_aliased();
    }

    /// A drive whose bytes another device or process took while it was
    /// erased (a loop device attached over the same file, a writer of its
    /// backing file) has its erase stopped, and only that drive: the
    /// claim's watcher found it (`drivelab_device::watch`). A loop device
    /// reseated at once is one: its old node is then pulled.
    fn stop_aliased(&mut self) {
        for a in drivelab_device::watch::aliases() {
            let Some((name, slot)) = self
                .slots
                .iter()
                .find(|(_, s)| s.running() && s.view.lock().is_ok_and(|v| v.device == a.target))
            else {
                continue;
            };
            if Control::is(&slot.control.stop) {
                continue;
            }
            slot.control.stop_for(&slot.control.abort);
            let line = a.to_string();
            self.events
                .emit("warning", json!({"name": name, "warning": line}));
            if self.events.on() {
                eprintln!("drivelab: station: warning: {line}");
            } else {
                self.warning = Some(line);
            }
        }
    }

    /// The slot of a drive named by kernel name, node or serial.
    fn find(&self, who: &str) -> Result<&Slot, String> {
        let name = who.strip_prefix("/dev/").unwrap_or(who);
        self.slots
            .get(name)
            .or_else(|| {
                self.slots
                    .values()
                    .find(|s| s.view().serial.as_deref() == Some(who))
            })
            .ok_or_else(|| format!("no drive '{who}': name it by kernel name, /dev node or serial"))
    }

    fn command(&mut self, c: &Command) -> Result<(), String> {
        match c {
            Command::Hold(d) => {
                let s = self.find(d)?;
                s.control.stop_for(&s.control.hold);
            }
            Command::Abort(d) => {
                let s = self.find(d)?;
                s.control.stop_for(&s.control.abort);
            }
            Command::Resume(d) | Command::Confirm(d) => {
                let s = self.find(d)?;
                if s.view().state != State::Held {
                    return Err(format!("{d} is not held"));
                }
                if matches!(c, Command::Confirm(_)) {
                    s.control.confirmed.store(true, Ordering::SeqCst);
                }
                s.control.go.store(true, Ordering::SeqCst);
            }
            Command::Tag(d, t) => {
                let s = self.find(d)?;
                if let Ok(mut v) = s.view.lock() {
                    v.asset_tag = Some(t.clone());
                }
            }
            Command::Quit => {}
        }
        Ok(())
    }

    /// Handle what the workers sent while the station stops.
    fn drain(&mut self, rx: &Receiver<Msg>) {
        while let Ok(m) = rx.try_recv() {
            match m {
                Msg::Changed { view, progress } => self
                    .events
                    .drive(if progress { "progress" } else { "state" }, &view),
                Msg::Result(r) => self.store(&r),
                _ => {}
            }
        }
    }

    fn store(&mut self, r: &crate::msg::DriveResult) {
        let rec = StationRecord::of(
            r,
            &self.ctx.policy,
            &self.ctx.policy_path.display().to_string(),
        );
        match self.sink.store(r, &rec) {
            Ok(id) => {
                self.stored += 1;
                self.events.emit(
                    "stored",
                    json!({"name": r.view.name, "serial": r.view.serial, "bay": r.view.bay,
                           "state": rec.state, "record": id}),
                );
            }
            Err(e) => {
                let line = format!("{}'s result was not stored: {e}", r.view.device.display());
                self.events
                    .emit("warning", json!({"name": r.view.name, "warning": line}));
                if self.events.on() {
                    eprintln!("drivelab: station: warning: {line}");
                } else {
                    self.warning = Some(line);
                }
            }
        }
    }

    /// Stop every worker (erases stop with their journals kept) and wait
    /// a while for them; a worker hung in a command is left behind.
    fn quit(&mut self, rx: &Receiver<Msg>) {
        for s in self.slots.values() {
            s.control.quit.store(true, Ordering::SeqCst);
            s.control.stop.store(true, Ordering::SeqCst);
        }
        let deadline = Instant::now() + QUIT_WAIT;
        let mut left = 0usize;
        let handles: Vec<_> = self
            .slots
            .values_mut()
            .filter_map(|s| s.handle.take())
            .collect();
        for h in handles {
            while !h.is_finished() && Instant::now() < deadline {
                self.drain(rx);
                std::thread::sleep(Duration::from_millis(50));
            }
            if h.is_finished() {
                let _ = h.join();
            } else {
                left += 1;
            }
        }
        // Results sent while stopping (a stopped erase's record).
        self.drain(rx);
        let rows = self.rows();
        self.sink.observe(&rows);
        self.events.emit(
            "stop",
            json!({"drives": rows.len(), "stored": self.stored, "workers_left": left,
                   "states": rows.iter().map(|v| json!({"name": v.name, "state": v.state})).collect::<Vec<_>>()}),
        );
    }
}
