//! `ecosched ctl history`: the records of ended runs, groups and jobs
//! ([`ecosched_service::history`]), from the daemon or, with
//! `--state-dir`, straight from the store's file — as a table or JSON.

use crate::cli::HistoryArgs;
use crate::outcome::Outcome;
use crate::table::{num, Align, Table};
use anyhow::Result;
use ecosched_service::ctl::{self, Request};
use ecosched_service::history::{History, Stored};
use std::path::Path;

/// `ecosched ctl history`.
pub fn history(socket: &Path, args: &HistoryArgs) -> Result<Outcome> {
    let records: Vec<serde_json::Value> = match &args.state_dir {
        Some(dir) => {
            let store = History::open(dir)?;
            let listed = store.list(args.name.as_deref(), args.limit)?;
            listed
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()?
        }
        None => {
            let answer = ctl::call(
                socket,
                &Request::History {
                    name: args.name.clone(),
                    limit: Some(args.limit),
                },
            )?;
            serde_json::from_value(answer)?
        }
    };
    if args.json {
        return Ok(Outcome::ok(format!(
            "{}\n",
            serde_json::to_string_pretty(&records)?
        )));
    }
    let mut t = Table::new(
        &[
            "id", "kind", "name", "ended", "wall s", "CPU s", "energy J", "source", "policy",
            "ended by",
        ],
        &[
            Align::Right,
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
        ],
    );
    for value in records {
        let s: Stored = serde_json::from_value(value)?;
        let r = &s.record;
        t.row([
            s.id.to_string(),
            r.kind.clone(),
            r.name.clone(),
            utc(r.ended_s),
            num(r.wall_s),
            num(r.cpu_s),
            r.energy.as_ref().map_or("-".into(), |e| num(e.joules)),
            r.energy.as_ref().map_or("-".into(), |e| e.source.clone()),
            r.policy.clone(),
            r.ended_by.clone(),
        ]);
    }
    Ok(Outcome::ok(t.render()))
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS` UTC.
fn utc(s: u64) -> String {
    let (days, rest) = (s / 86_400, s % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20");
    }
}
