//! The station's main loop: one slot per drive seen, a worker thread per
//! drive, and one loop that takes every message (kernel events, workers'
//! changes and results, operator commands, keys), checks every quarter
//! second that each drive being worked on is still there, and draws the
//! screen or writes the events. The loop never waits on a drive.

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
                last_check = Instant::now();
                let rows = self.rows();
                self.sink.observe(&rows);
                if let Some(s) = screen.as_mut() {
                    if let Some(w) = self.warning.take() {
                        s.message = w;
                    }
                    let rows = self.rows();
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
                if let Some(slot) = self.slots.get(&name) {
                    slot.control.stop_for(&slot.control.removed);
                }
            }
            Seen::Changed(name) => {
                let Ok(dev) = BlockDevice::from_name(&name) else {
                    return;
                };
                let shown = !dev.partition
                    && dev.size.0 > 0
                    && watch::is_shown(dev.kind, self.ctx.policy.include_loop);
                let known = self.slots.get(&name).map(|s| {
                    let id = s.identity.lock().ok().and_then(|g| g.clone());
                    (s.view().state, id, Control::is(&s.control.removed))
                });
                match known {
                    // A new drive, or in a slot whose drive is done with: a
                    // different one, or one plugged back after it was
                    // pulled (the same drive back at the same node has the
                    // same identity: only its removal tells it came again).
                    None if shown => self.add(&dev),
                    Some((state, id, pulled))
                        if shown
                            && state.is_final()
                            && (pulled || id.as_ref() != Some(&Identity::of(&dev))) =>
                    {
                        self.add(&dev)
                    }
                    _ => {}
                }
            }
        }
    }

    /// Every drive being worked on that is no longer the same drive was
    /// pulled: stop its worker (sysfs reads only).
    fn check_present(&mut self) {
        for (name, slot) in &self.slots {
            let state = slot.view().state;
            if state.is_final() || Control::is(&slot.control.removed) {
                continue;
            }
            let id = slot.identity.lock().ok().and_then(|g| g.clone());
            if id.is_some_and(|id| !id.still(name)) {
                slot.control.stop_for(&slot.control.removed);
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
