//! What the advisor remembers between runs, in SQLite
//! (`<state dir>/ecosched-slurm.sqlite`): per user and job name, the class
//! and where it came from, and the last measured activity. A job rerun
//! under the same name is then classed from its first second, by the
//! advisor for the nodes and by `job_submit.lua` (through
//! [`Store::export_classes`]) for its own `--prefer`.
//!
//! ```text
//! jobs(user, name, class, source, cpu_busy, mem_bus, samples, updated_s)
//!      source: "declared" (the job's comment) | "measured" | "remembered"
//!      cpu_busy: CPUs the job kept busy (exporter's CPU seconds / wall s)
//!      mem_bus: memory-bus component in [0,1]; NULL where it cannot be
//!               measured (no hardware counters, e.g. a VM)
//! ```

use crate::plan::Class;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// The database's file name in the state directory.
pub const FILE: &str = "ecosched-slurm.sqlite";
/// The class table `job_submit.lua` reads, in the state directory.
pub const CLASSES_FILE: &str = "classes.tsv";

/// Why the store failed, with the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused.
    #[error("{path}: {source}")]
    Sql {
        /// The database.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// One remembered job kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its class.
    pub class: Class,
    /// Where the class came from.
    pub source: String,
    /// CPUs the job kept busy, last measured.
    pub cpu_busy: Option<f64>,
    /// Memory-bus component, when measured.
    pub mem_bus: Option<f64>,
    /// How many measurements went in.
    pub samples: i64,
}

/// One measurement of a job's activity; a component that could not be
/// measured is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Measured {
    /// CPUs the job kept busy.
    pub cpu_busy: Option<f64>,
    /// Memory-bus component.
    pub mem_bus: Option<f64>,
}

/// The open database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    dir: PathBuf,
}

impl Store {
    /// Open (creating) the store in `state_dir`.
    pub fn open(state_dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(state_dir).map_err(|source| StoreError::Io {
            path: state_dir.to_path_buf(),
            source,
        })?;
        let path = state_dir.join(FILE);
        let sql = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let conn = Connection::open(&path).map_err(sql)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS jobs (
                user TEXT NOT NULL,
                name TEXT NOT NULL,
                class TEXT NOT NULL CHECK (class IN ('mem', 'cpu')),
                source TEXT NOT NULL,
                cpu_busy REAL,
                mem_bus REAL,
                samples INTEGER NOT NULL DEFAULT 0,
                updated_s INTEGER NOT NULL,
                PRIMARY KEY (user, name)
            );",
        )
        .map_err(sql)?;
        Ok(Store {
            conn,
            path,
            dir: state_dir.to_path_buf(),
        })
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    /// What is remembered about `user`'s jobs named `name`.
    pub fn get(&self, user: &str, name: &str) -> Result<Option<Entry>, StoreError> {
        self.conn
            .query_row(
                "SELECT class, source, cpu_busy, mem_bus, samples FROM jobs WHERE user = ?1 AND name = ?2",
                params![user, name],
                |r| {
                    let class: String = r.get(0)?;
                    Ok((class, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                },
            )
            .optional()
            .map_err(|e| self.sql(e))
            .map(|row| {
                row.and_then(|(class, source, cpu_busy, mem_bus, samples)| {
                    Some(Entry {
                        class: Class::parse(&class)?,
                        source,
                        cpu_busy,
                        mem_bus,
                        samples,
                    })
                })
            })
    }

    /// Remember `class` (from `source`) for `user`'s `name`, and a
    /// measurement when there is one (a missing one keeps the last).
    pub fn record(
        &self,
        user: &str,
        name: &str,
        class: Class,
        source: &str,
        m: Measured,
        now_s: i64,
    ) -> Result<(), StoreError> {
        let measured = i64::from(m.cpu_busy.is_some() || m.mem_bus.is_some());
        self.conn
            .execute(
                "INSERT INTO jobs (user, name, class, source, cpu_busy, mem_bus, samples, updated_s)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (user, name) DO UPDATE SET
                    class = excluded.class,
                    source = excluded.source,
                    cpu_busy = COALESCE(excluded.cpu_busy, jobs.cpu_busy),
                    mem_bus = COALESCE(excluded.mem_bus, jobs.mem_bus),
                    samples = jobs.samples + excluded.samples,
                    updated_s = excluded.updated_s",
                params![user, name, class.name(), source, m.cpu_busy, m.mem_bus, measured, now_s],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Write `classes.tsv` (`user<TAB>name<TAB>class` per line) for
    /// `job_submit.lua`, atomically (written aside, then renamed), and
    /// return its path.
    pub fn export_classes(&self) -> Result<PathBuf, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT user, name, class FROM jobs ORDER BY user, name")
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(format!(
                    "{}\t{}\t{}\n",
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?
                ))
            })
            .map_err(|e| self.sql(e))?;
        let mut text = String::new();
        for row in rows {
            text.push_str(&row.map_err(|e| self.sql(e))?);
        }
        let path = self.dir.join(CLASSES_FILE);
        let aside = self.dir.join(format!("{CLASSES_FILE}.new"));
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        std::fs::write(&aside, text).map_err(io)?;
        std::fs::rename(&aside, &path).map_err(io)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn busy(x: f64) -> Measured {
        Measured {
            cpu_busy: Some(x),
            mem_bus: None,
        }
    }

    #[test]
    fn classes_persist_across_opens_and_are_exported() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Store::open(dir.path()).unwrap();
            assert_eq!(s.get("ann", "stream").unwrap(), None);
            s.record("ann", "stream", Class::Mem, "declared", busy(0.98), 10)
                .unwrap();
            // No measurement this time: the last one stays.
            s.record(
                "ann",
                "stream",
                Class::Mem,
                "declared",
                Measured::default(),
                11,
            )
            .unwrap();
            s.record("bob", "crunch", Class::Cpu, "declared", busy(1.0), 12)
                .unwrap();
        }
        let s = Store::open(dir.path()).unwrap();
        let e = s.get("ann", "stream").unwrap().unwrap();
        assert_eq!(e.class, Class::Mem);
        assert_eq!(e.cpu_busy, Some(0.98));
        assert_eq!(e.mem_bus, None);
        assert_eq!(e.samples, 1);
        let path = s.export_classes().unwrap();
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            "ann\tstream\tmem\nbob\tcrunch\tcpu\n"
        );
    }

    #[test]
    fn a_directory_that_cannot_exist_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let e = Store::open(&file.join("sub")).unwrap_err().to_string();
        assert!(e.contains("/f/sub"), "{e}");
    }
}
