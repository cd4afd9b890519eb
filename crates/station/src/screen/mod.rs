//! The station's terminal screen (ratatui over crossterm): one row per
//! drive (bay, model, serial, size, grade, state, progress bar, speed,
//! ETA, temperature), the selected drive's state line under the table,
//! and keys, no mouse: ↑/↓ (or k/j) select, h hold, r resume, c confirm,
//! a abort, l the drive's log (its state changes, newest last; l or Esc
//! back), q quit (asked again while erasures run; their journals stay).
//! It fits 80x24 (SSH, a serial console): columns shrink, the bay shows
//! its tail.

use std::io::{self, Stdout};
use std::sync::mpsc::Sender;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Terminal;

use crate::drive::state::View;
use crate::msg::{Command, Msg};

/// The screen, restored to a normal terminal on drop.
pub struct Screen {
    term: Terminal<CrosstermBackend<Stdout>>,
    selected: usize,
    asking_quit: bool,
    /// Whether the selected drive's log is shown instead of the table.
    log_open: bool,
    /// A line for the operator (a refused command).
    pub message: String,
}

impl Screen {
    /// Take the terminal (raw mode, alternate screen) and start the key
    /// reader, which sends each key press to `tx`.
    pub fn start(tx: Sender<Msg>) -> io::Result<Screen> {
        terminal::enable_raw_mode()?;
        let mut out = io::stdout();
        if let Err(e) = crossterm::execute!(out, EnterAlternateScreen) {
            let _ = terminal::disable_raw_mode();
            return Err(e);
        }
        let term = Terminal::new(CrosstermBackend::new(out))?;
        std::thread::spawn(move || loop {
            match crossterm::event::read() {
                Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => {
                    if tx.send(Msg::Key(k)).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(_) => return,
            }
        });
        Ok(Screen {
            term,
            selected: 0,
            asking_quit: false,
            log_open: false,
            message: String::new(),
        })
    }

    /// The drive selected among `rows`.
    pub fn selected<'a>(&self, rows: &'a [View]) -> Option<&'a View> {
        rows.get(self.selected.min(rows.len().saturating_sub(1)))
    }

    /// What a key asks for, given the rows shown.
    pub fn key(&mut self, k: KeyEvent, rows: &[View], busy: bool) -> Option<Command> {
        let ctrl_c = k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c');
        if self.asking_quit {
            self.asking_quit = false;
            return matches!(k.code, KeyCode::Char('y') | KeyCode::Char('Y'))
                .then_some(Command::Quit);
        }
        let name = rows.get(self.selected).map(|v| v.name.clone());
        self.message.clear();
        match k.code {
            _ if ctrl_c || k.code == KeyCode::Char('q') => {
                if busy {
                    self.asking_quit = true;
                    None
                } else {
                    Some(Command::Quit)
                }
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.selected = self.selected.saturating_sub(1);
                None
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(rows.len().saturating_sub(1));
                None
            }
            KeyCode::Char('h') => name.map(Command::Hold),
            KeyCode::Char('r') => name.map(Command::Resume),
            KeyCode::Char('c') => name.map(Command::Confirm),
            KeyCode::Char('a') => name.map(Command::Abort),
            KeyCode::Char('l') => {
                self.log_open = !self.log_open;
                None
            }
            KeyCode::Esc => {
                self.log_open = false;
                None
            }
            _ => None,
        }
    }

    /// Draw the rows, or with the log open the selected drive's `log`.
    pub fn draw(&mut self, rows: &[View], bays: &[String], stored: usize, log: &[String]) {
        self.selected = self.selected.min(rows.len().saturating_sub(1));
        let sel = self.selected;
        let foot = if self.asking_quit {
            "erasures are running: quit anyway? Their journals are kept (y/n)".to_string()
        } else if !self.message.is_empty() {
            self.message.clone()
        } else {
            rows.get(sel)
                .map(|v| format!("{}: {} {}", v.device.display(), v.state.word(), v.detail))
                .unwrap_or_else(|| "no drives yet: plug one into a bay".into())
        };
        let head = format!(
            "drivelab station  bays: {}  stored: {stored}",
            bays.join(" ")
        );
        let log_open = self.log_open && !rows.is_empty();
        let log_title = rows
            .get(sel)
            .map(|v| format!("log of {} (l or Esc: back)", v.device.display()))
            .unwrap_or_default();
        let _ = self.term.draw(|f| {
            let [top, mid, bottom, keys] = Layout::vertical([
                Constraint::Length(1),
                Constraint::Min(3),
                Constraint::Length(1),
                Constraint::Length(1),
            ])
            .areas(f.area());
            f.render_widget(Paragraph::new(Line::from(head)), top);
            let header = Row::new(
                [
                    "BAY", "MODEL", "SERIAL", "SIZE", "GRADE", "STATE", "PROGRESS", "SPEED", "ETA",
                    "°C",
                ]
                .map(Cell::from),
            )
            .style(Style::default().add_modifier(Modifier::BOLD));
            let body: Vec<Row> = rows.iter().map(row).collect();
            // 70 columns and 9 gaps: 79, so a row fits 80 columns.
            let widths = [
                Constraint::Length(9),
                Constraint::Length(8),
                Constraint::Length(8),
                Constraint::Length(6),
                Constraint::Length(5),
                Constraint::Length(9),
                Constraint::Length(10),
                Constraint::Length(7),
                Constraint::Length(5),
                Constraint::Length(3),
            ];
            let table = Table::new(body, widths)
                .header(header)
                .column_spacing(1)
                .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
            if log_open {
                f.render_widget(log_pane(&log_title, log, mid.height), mid);
            } else {
                let mut state = TableState::default().with_selected(Some(sel));
                f.render_stateful_widget(table, mid, &mut state);
            }
            f.render_widget(Paragraph::new(Line::from(foot)), bottom);
            f.render_widget(
                Paragraph::new(Line::from(
                    "↑↓ select  h hold  r resume  c confirm  a abort  l log  q quit",
                )),
                keys,
            );
        });
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = crossterm::execute!(self.term.backend_mut(), LeaveAlternateScreen);
        let _ = terminal::disable_raw_mode();
        let _ = self.term.show_cursor();
    }
}

/// The log pane: its title, then the newest lines that fit `height`.
fn log_pane<'a>(title: &'a str, log: &'a [String], height: u16) -> Paragraph<'a> {
    let fit = usize::from(height).saturating_sub(1);
    let mut lines = vec![Line::from(title).style(Style::default().add_modifier(Modifier::BOLD))];
    lines.extend(
        log[log.len().saturating_sub(fit)..]
            .iter()
            .map(|l| Line::from(l.as_str())),
    );
    Paragraph::new(lines)
}

/// The last `n` characters of `s`.
fn tail(s: &str, n: usize) -> String {
    let c: Vec<char> = s.chars().collect();
    c[c.len().saturating_sub(n)..].iter().collect()
}

/// A size in 1000-based units, as drive labels give it.
pub fn size_text(b: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    if v >= 100.0 || i == 0 {
        format!("{v:.0}{}", units[i])
    } else {
        format!("{v:.1}{}", units[i])
    }
}

/// One drive's row.
fn row(v: &View) -> Row<'static> {
    let bar = if v.state.is_busy() || v.progress_pct > 0.0 {
        let k = (v.progress_pct / 100.0 * 5.0).round().clamp(0.0, 5.0) as usize;
        format!(
            "{}{}{:>4.0}%",
            "#".repeat(k),
            ".".repeat(5 - k),
            v.progress_pct
        )
    } else {
        String::new()
    };
    let speed = if v.state.is_busy() && v.speed_bytes_per_s > 0.0 {
        format!("{}/s", size_text(v.speed_bytes_per_s as u64))
    } else {
        String::new()
    };
    let eta = match v.eta_s {
        Some(s) if v.state.is_busy() && s < 360_000.0 => {
            let s = s.round() as u64;
            if s >= 3600 {
                format!("{}h{:02}", s / 3600, s % 3600 / 60)
            } else {
                format!("{}:{:02}", s / 60, s % 60)
            }
        }
        _ => String::new(),
    };
    let bay = v.bay.clone().unwrap_or_else(|| format!("({})", v.name));
    let bay = bay.rsplit('/').next().unwrap_or(&bay).to_string();
    Row::new(vec![
        Cell::from(tail(&bay, 9)),
        Cell::from(v.model.clone().unwrap_or_default()),
        Cell::from(v.serial.clone().unwrap_or_default()),
        Cell::from(if v.size > 0 {
            size_text(v.size)
        } else {
            String::new()
        }),
        Cell::from(
            v.grade
                .as_ref()
                .map(|g| g.grade.clone())
                .unwrap_or_default(),
        ),
        Cell::from(v.state.word()),
        Cell::from(bar),
        Cell::from(speed),
        Cell::from(eta),
        Cell::from(v.temperature_c.map(|t| t.to_string()).unwrap_or_default()),
    ])
}
