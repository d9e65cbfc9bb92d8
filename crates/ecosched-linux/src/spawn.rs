//! Starting the managed command: found and checked before anything on the
//! machine changes, and already inside its cgroups when its first
//! instruction runs.
//!
//! ```text
//! resolve(program)          PATH search, like a shell: missing → 127, not executable → 126
//! /bin/sh -c JOIN sh F… -- /abs/program args…
//!     echo $$ > F  (each cgroup's membership file; the shell's PID is the command's)
//!     exec "$@"    (same PID: the command starts confined, counted and signalled)
//! ```
//!
//! Why a shell trampoline: moving the child between `fork` and `exec`
//! needs `pre_exec`, which is `unsafe` and forbidden in this workspace;
//! `clone3(CLONE_INTO_CGROUP)` needs it too and cgroup v2. A POSIX shell
//! that writes its own PID and then `exec`s does the same thing in safe
//! code: the command replaces the shell in the same process, so there is no
//! instant at which it runs outside its cgroups (`nproc` under a one-CPU
//! cpuset prints 1 every time). A failed join exits 125 before the command
//! runs, the status ecosched uses for its own failures.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the command cannot be started; its exit status follows the shell's.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Not found (exit status 127).
    #[error("{program}: command not found{}", in_path(.searched))]
    NotFound {
        /// As given.
        program: String,
        /// Whether `PATH` was searched.
        searched: bool,
    },
    /// Found but cannot be executed (exit status 126).
    #[error("{}: cannot execute: {why}", .path.display())]
    NotExecutable {
        /// What was found.
        path: PathBuf,
        /// Why: a directory, no execute permission …
        why: String,
    },
}

fn in_path(searched: &bool) -> &'static str {
    if *searched {
        " in PATH"
    } else {
        ""
    }
}

impl CommandError {
    /// The shell's exit status for this failure (127 or 126).
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::NotFound { .. } => 127,
            CommandError::NotExecutable { .. } => 126,
        }
    }
}

/// Whether `path` is an executable regular file; why not otherwise.
fn check_executable(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.is_dir() {
        return Err("it is a directory".into());
    }
    nix::unistd::access(path, nix::unistd::AccessFlags::X_OK)
        .map_err(|e| format!("no permission to execute it ({e})"))
}

/// Find `program` as a shell would: a name with a `/` is a path, anything
/// else is searched in `path_var` (`$PATH`). The first executable match
/// wins; a non-executable match is reported when no executable one exists.
pub fn resolve(program: &str, path_var: Option<&str>) -> Result<PathBuf, CommandError> {
    if program.is_empty() {
        return Err(CommandError::NotFound {
            program: "\"\"".into(),
            searched: false,
        });
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        if !path.exists() {
            return Err(CommandError::NotFound {
                program: program.into(),
                searched: false,
            });
        }
        return check_executable(&path)
            .map(|()| path.clone())
            .map_err(|why| CommandError::NotExecutable { path, why });
    }
    let mut unusable = None;
    for dir in path_var
        .unwrap_or("/usr/local/bin:/usr/bin:/bin")
        .split(':')
    {
        let dir = if dir.is_empty() { "." } else { dir };
        let candidate = Path::new(dir).join(program);
        if !candidate.exists() {
            continue;
        }
        match check_executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(why) => {
                unusable.get_or_insert(CommandError::NotExecutable {
                    path: candidate,
                    why,
                });
            }
        }
    }
    Err(unusable.unwrap_or(CommandError::NotFound {
        program: program.into(),
        searched: true,
    }))
}

/// The trampoline: joins each of `join_files` (absolute paths of cgroup
/// membership files), then becomes `program args`.
const JOIN: &str = "p=$$; while [ \"$1\" != -- ]; do echo \"$p\" > \"$1\" || { echo \"ecosched: the command could not join cgroup file $1\" >&2; exit 125; }; shift; done; shift; exec \"$@\"";

/// A `Command` that runs `program args` already inside the cgroups whose
/// membership files are `join_files`; without any, the program itself.
pub fn command_in(program: &Path, args: &[String], join_files: &[PathBuf]) -> Command {
    if join_files.is_empty() {
        let mut c = Command::new(program);
        c.args(args);
        return c;
    }
    let mut c = Command::new("/bin/sh");
    c.arg("-c").arg(JOIN).arg("ecosched-join");
    c.args(join_files).arg("--").arg(program).args(args);
    c
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn missing_and_unexecutable_programs_get_the_shells_codes() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = resolve(
            "no-such-program-ecosched",
            Some(dir.path().to_str().unwrap()),
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 127);
        assert!(e.to_string().contains("not found in PATH"), "{e}");
        let e = resolve(dir.path().join("absent").to_str().unwrap(), None).unwrap_err();
        assert_eq!(e.exit_code(), 127);
        let e = resolve(dir.path().to_str().unwrap(), None).unwrap_err();
        assert_eq!(e.exit_code(), 126);
        assert!(e.to_string().contains("directory"), "{e}");
        // As root, access(X_OK) still needs one execute bit.
        let e = resolve(plain.to_str().unwrap(), None).unwrap_err();
        assert_eq!(e.exit_code(), 126);
        let e = resolve("plain", Some(dir.path().to_str().unwrap())).unwrap_err();
        assert_eq!(e.exit_code(), 126, "a non-executable match is named: {e}");
        assert!(resolve("sh", Some("/nonexistent:/bin"))
            .unwrap()
            .ends_with("sh"));
    }

    #[test]
    fn the_trampoline_joins_then_becomes_the_command_with_its_arguments_intact() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        let out = command_in(
            Path::new("/bin/sh"),
            &[
                "-c".into(),
                "echo \"$$ $1\"".into(),
                "x".into(),
                "two words".into(),
            ],
            &[a.clone(), b.clone()],
        )
        .output()
        .unwrap();
        assert!(out.status.success());
        let printed = String::from_utf8(out.stdout).unwrap();
        let written = std::fs::read_to_string(&a).unwrap();
        assert_eq!(written, std::fs::read_to_string(&b).unwrap());
        // The PID that joined is the command's own.
        assert_eq!(printed, format!("{} two words\n", written.trim()));
        let refused = command_in(
            Path::new("/bin/true"),
            &[],
            &[dir.path().join("missing/dir/file")],
        )
        .output()
        .unwrap();
        assert_eq!(refused.status.code(), Some(125));
    }
}
