//! Records that outlive the work: when a run, a daemon group or a Slurm
//! job ends, its totals — energy and where it came from, CPU time, wall
//! time, the policy and what it decided — go to a SQLite file in the state
//! directory (`<state dir>/history.sqlite`), which `ecosched ctl history`
//! lists and `job-end` answers from.
//!
//! ```text
//! records(id INTEGER PRIMARY KEY, kind TEXT, name TEXT, ended_s INTEGER, record TEXT)
//!         kind: "run" | "group" | "job";  record: the Record as JSON
//! ```
//!
//! The file keeps the last [`KEEP`] records: every write deletes older
//! ones, so it never grows with the machine's uptime. Both the daemon and
//! `ecosched run --state-dir` write to it; SQLite serialises the writers.

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The database's file name in the state directory.
pub const FILE: &str = "history.sqlite";

/// How many records the store keeps; older ones are deleted as new ones
/// are written.
pub const KEEP: i64 = 10_000;

/// How long a writer waits for another one (the daemon and a run).
const BUSY_WAIT: Duration = Duration::from_secs(2);

/// Why the store failed, with the file.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// SQLite refused (not a database, read-only, locked …).
    #[error("history store {path}: {source}")]
    Sql {
        /// The database.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A stored record is not one this ecosched can read.
    #[error("history store {path}: record {id}: {reason}")]
    Record {
        /// The database.
        path: PathBuf,
        /// The record's row id.
        id: i64,
        /// What is wrong with it.
        reason: String,
    },
}

/// Energy a piece of work used, and where the figure comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Energy {
    /// Joules.
    pub joules: f64,
    /// `rapl` or `hwmon` (measured), or `estimate`.
    pub source: String,
    /// Which meter or model, in one line (the estimate's model and its
    /// figures' origin, or the measured zones).
    pub meter: String,
    /// How the machine's energy was shared out to the work (`whole run`
    /// for a run, which owns the machine's energy over its life).
    pub attribution: String,
}

/// The totals of one piece of work that ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `run`, `group` or `job`.
    pub kind: String,
    /// The group's name (`job-ID` for a job), or the run's command.
    pub name: String,
    /// When it started and ended, seconds since the Unix epoch.
    pub started_s: u64,
    /// See `started_s`.
    pub ended_s: u64,
    /// Wall time managed, seconds.
    pub wall_s: f64,
    /// CPU time used, seconds.
    pub cpu_s: f64,
    /// Where the CPU time was read (its cgroup, its processes …).
    pub cpu_source: String,
    /// Its energy, where a meter or estimate was read.
    pub energy: Option<Energy>,
    /// The policy (the last one, when it was changed while running).
    pub policy: String,
    /// Control steps whose plan changed something (counted by the daemon).
    pub decisions: Option<u64>,
    /// The policy's typed statistics at the end (name → value).
    pub stats: serde_json::Value,
    /// Why it ended (`job-end`, `cgroup gone`, `daemon stopped`,
    /// `exited 0` …).
    pub ended_by: String,
}

impl Record {
    /// One line: energy with its source, CPU and wall seconds, policy —
    /// what Slurm's AdminComment carries. Lowercase throughout, units in
    /// the keys: `sacctmgr` lowercases what it writes.
    pub fn summary(&self) -> String {
        let energy = match &self.energy {
            Some(e) => format!("energy_j={:.1} source={}", e.joules, e.source),
            None => "energy_j=- source=none".into(),
        };
        format!(
            "ecosched: {energy} cpu_s={:.2} wall_s={:.1} policy={}",
            self.cpu_s, self.wall_s, self.policy
        )
    }
}

/// One stored record with its row id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    /// Row id, growing with every record.
    pub id: i64,
    /// The record.
    #[serde(flatten)]
    pub record: Record,
}

/// The open store.
#[derive(Debug)]
pub struct History {
    conn: Connection,
    path: PathBuf,
}

impl History {
    /// Open (creating) the store in `state_dir`.
    pub fn open(state_dir: &Path) -> Result<Self, HistoryError> {
        Self::open_file(&state_dir.join(FILE))
    }

    /// Open (creating) the store at `path`.
    pub fn open_file(path: &Path) -> Result<Self, HistoryError> {
        let sql = |source| HistoryError::Sql {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(BUSY_WAIT).map_err(sql)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS records (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                kind TEXT NOT NULL,
                name TEXT NOT NULL,
                ended_s INTEGER NOT NULL,
                record TEXT NOT NULL
            );
            CREATE INDEX IF NOT EXISTS records_name ON records(name);",
        )
        .map_err(sql)?;
        Ok(History {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, source: rusqlite::Error) -> HistoryError {
        HistoryError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    /// Store `record` and drop what is older than the last [`KEEP`];
    /// answers its row id.
    pub fn add(&mut self, record: &Record) -> Result<i64, HistoryError> {
        let json = serde_json::to_string(record).map_err(|e| HistoryError::Record {
            path: self.path.clone(),
            id: 0,
            reason: e.to_string(),
        })?;
        let ended = i64::try_from(record.ended_s).unwrap_or(i64::MAX);
        let tx = self.conn.transaction().map_err(|e| HistoryError::Sql {
            path: self.path.clone(),
            source: e,
        })?;
        tx.execute(
            "INSERT INTO records (kind, name, ended_s, record) VALUES (?1, ?2, ?3, ?4)",
            params![record.kind, record.name, ended, json],
        )
        .and_then(|_| {
            let id = tx.last_insert_rowid();
            tx.execute("DELETE FROM records WHERE id <= ?1", params![id - KEEP])?;
            tx.commit()?;
            Ok(id)
        })
        .map_err(|e| self.sql(e))
    }

    /// The last `limit` records, newest first, of `name` only when given.
    pub fn list(&self, name: Option<&str>, limit: usize) -> Result<Vec<Stored>, HistoryError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, record FROM records WHERE ?1 IS NULL OR name = ?1
                 ORDER BY id DESC LIMIT ?2",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![name, limit], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, json) = row.map_err(|e| self.sql(e))?;
            out.push(self.decode(id, &json)?);
        }
        Ok(out)
    }

    /// The newest record of `name`.
    pub fn last_of(&self, name: &str) -> Result<Option<Stored>, HistoryError> {
        let row = self
            .conn
            .query_row(
                "SELECT id, record FROM records WHERE name = ?1 ORDER BY id DESC LIMIT 1",
                params![name],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        row.map(|(id, json)| self.decode(id, &json)).transpose()
    }

    /// How many records are stored.
    pub fn len(&self) -> Result<i64, HistoryError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM records", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> Result<bool, HistoryError> {
        Ok(self.len()? == 0)
    }

    fn decode(&self, id: i64, json: &str) -> Result<Stored, HistoryError> {
        let record = serde_json::from_str(json).map_err(|e| HistoryError::Record {
            path: self.path.clone(),
            id,
            reason: e.to_string(),
        })?;
        Ok(Stored { id, record })
    }
}

/// Seconds since the Unix epoch now.
pub fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    pub(crate) fn record(name: &str, cpu_s: f64) -> Record {
        Record {
            kind: "job".into(),
            name: name.into(),
            started_s: 1_000,
            ended_s: 1_010,
            wall_s: 10.0,
            cpu_s,
            cpu_source: "cgroup sys/fs/cgroup/job".into(),
            energy: Some(Energy {
                joules: 123.45,
                source: "estimate".into(),
                meter: "generic model".into(),
                attribution: "CPU-time share".into(),
            }),
            policy: "hilo".into(),
            decisions: Some(3),
            stats: serde_json::json!({"plans": 3}),
            ended_by: "job-end".into(),
        }
    }

    #[test]
    fn records_come_back_newest_first_and_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = History::open(dir.path()).unwrap();
        assert!(h.is_empty().unwrap());
        h.add(&record("job-1", 1.0)).unwrap();
        h.add(&record("job-2", 2.0)).unwrap();
        h.add(&record("job-1", 3.0)).unwrap();
        let all = h.list(None, 10).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].record.cpu_s, 3.0);
        assert_eq!(h.list(Some("job-2"), 10).unwrap()[0].record.cpu_s, 2.0);
        assert_eq!(h.last_of("job-1").unwrap().unwrap().record.cpu_s, 3.0);
        assert!(h.last_of("job-9").unwrap().is_none());
        // Another opener (a run beside the daemon) sees the same records.
        drop(h);
        let again = History::open(dir.path()).unwrap();
        assert_eq!(again.len().unwrap(), 3);
        assert_eq!(
            record("job-1", 1.0).summary(),
            "ecosched: energy_j=123.5 source=estimate cpu_s=1.00 wall_s=10.0 policy=hilo"
        );
    }

    #[test]
    fn the_store_keeps_the_last_records_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = History::open(dir.path()).unwrap();
        // Fill it to the bound quickly, in one transaction.
        let json = serde_json::to_string(&record("old", 0.0)).unwrap();
        h.conn
            .execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
                 INSERT INTO records (kind, name, ended_s, record) SELECT 'job', 'old', 0, ?2 FROM n",
                params![KEEP, json],
            )
            .unwrap();
        assert_eq!(h.len().unwrap(), KEEP);
        h.add(&record("new", 1.0)).unwrap();
        h.add(&record("new", 2.0)).unwrap();
        assert_eq!(h.len().unwrap(), KEEP);
        assert_eq!(h.list(None, 1).unwrap()[0].record.cpu_s, 2.0);
    }

    #[test]
    fn a_corrupt_or_unwritable_store_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        std::fs::write(&path, vec![b'x'; 4096]).unwrap();
        let e = History::open(dir.path()).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains("not a database"), "{e}");
        let missing = dir.path().join("no/such/dir");
        let e = History::open(&missing).unwrap_err().to_string();
        assert!(e.contains("no/such/dir"), "{e}");
    }
}
