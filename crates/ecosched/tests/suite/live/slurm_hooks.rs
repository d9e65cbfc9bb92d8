//! The Slurm Prolog and Epilog (`deploy/slurm/`) run directly, as slurmd
//! runs them (root, a bare environment, the job in `SLURM_*` variables),
//! against hostile settings files: a shell syntax error, `exit 3`,
//! command substitutions, a file another user owns or others may write,
//! the hook copied without `hook-common.sh`, a daemon that is not running.
//! Whatever happens a hook exits 0 (a failing hook drains the node), says
//! why on stderr and to syslog (`logger`, replaced here by a script that
//! records what it is given), and runs nothing the file holds.
//!
//! Needs root (a file owned by another user; the hooks run as root).

use crate::support::ecosched_path;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where the hooks are kept in the repository.
fn hooks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/slurm")
}

/// A node for one test: a directory with stand-ins for `logger`,
/// `ecosched` and `scontrol` that record their arguments, first on the
/// hooks' `PATH`.
struct Node {
    dir: tempfile::TempDir,
}

impl Node {
    fn new() -> Node {
        let node = Node {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(node.path("bin")).unwrap();
        node.script("logger", "syslog", "");
        // The daemon's answer to `job-end --summary`, as the Epilog reads it.
        node.script(
            "ecosched",
            "calls",
            "case \"$*\" in *job-end*) echo 'ecosched: energy_j=1.0 source=estimate cpu_s=0.5 wall_s=2.0 policy=hilo';; esac\n",
        );
        node.script("scontrol", "scontrol", "");
        node
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `bin/NAME`: appends its arguments as one line to RECORD, then runs
    /// `then`.
    fn script(&self, name: &str, record: &str, then: &str) {
        let file = self.path("bin").join(name);
        std::fs::write(
            &file,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >>'{}'\n{then}",
                self.path(record).display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The settings file `slurm.env` with `text`, mode 0644, owned by root.
    fn env_file(&self, text: &str) -> PathBuf {
        let file = self.path("slurm.env");
        std::fs::write(&file, text).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        file
    }

    /// `hook` run for job 42 of uid 1000 on node n1 with settings from
    /// `env_file`, in the bare environment slurmd gives.
    fn run(&self, hook: &Path, env_file: &Path) -> Output {
        Command::new(hook)
            .env_clear()
            .env(
                "PATH",
                format!(
                    "{}:/usr/sbin:/usr/bin:/sbin:/bin",
                    self.path("bin").display()
                ),
            )
            .env("SLURM_JOB_ID", "42")
            .env("SLURM_JOB_UID", "1000")
            .env("SLURMD_NODENAME", "n1")
            .env("ECOSCHED_SLURM_ENV", env_file)
            .current_dir(self.dir.path())
            .output()
            .unwrap()
    }

    /// What the file `name` holds, empty when it does not exist.
    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }
}

/// The Prolog and the Epilog of the repository.
fn both_hooks() -> [PathBuf; 2] {
    [hooks_dir().join("prolog"), hooks_dir().join("epilog")]
}

/// `hook` exited 0 and said `why` both on stderr and to syslog.
fn assert_exit_0_and_said(node: &Node, hook: &Path, out: &Output, why: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let syslog = node.read("syslog");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}\nstderr: {stderr}\nsyslog: {syslog}",
        hook.display(),
        out.status
    );
    assert!(
        stderr.contains(why),
        "{}: stderr lacks {why:?}: {stderr}",
        hook.display()
    );
    assert!(
        syslog.contains(why),
        "{}: syslog lacks {why:?}: {syslog}",
        hook.display()
    );
}

/// Each hook with the settings file `text` exits 0, says `why` (and the
/// file's name), and never calls ecosched: with settings it may not use,
/// the job runs unmanaged.
fn refused(text: &str, why: &str) -> Node {
    let node = Node::new();
    let file = node.env_file(text);
    for hook in both_hooks() {
        let out = node.run(&hook, &file);
        assert_exit_0_and_said(&node, &hook, &out, why);
        assert_exit_0_and_said(&node, &hook, &out, &file.display().to_string());
    }
    assert_eq!(
        node.read("calls"),
        "",
        "ecosched called with refused settings"
    );
    node
}

#[test]
#[ignore = "live: root (runs the Slurm hooks as slurmd does)"]
fn a_settings_file_with_a_shell_syntax_error_is_refused_and_the_hooks_exit_0() {
    refused(
        "ECOSCHED_POLICY=hilo\nif then fi (\n",
        "line 2: not KEY=VALUE",
    );
}

#[test]
#[ignore = "live: root (runs the Slurm hooks as slurmd does)"]
fn exit_in_the_settings_file_does_not_end_the_hooks() {
    refused("exit 3\n", "line 1: not KEY=VALUE");
}

#[test]
#[ignore = "live: root (runs the Slurm hooks as slurmd does)"]
fn nothing_in_the_settings_file_is_run() {
    let scratch = tempfile::tempdir().unwrap();
    let marks: Vec<PathBuf> = (1..=3)
        .map(|i| scratch.path().join(format!("pwned{i}")))
        .collect();
    let text = format!(
        "ECOSCHED_POLICY=$(touch {})\n$(touch {})\n`touch {}`\n",
        marks[0].display(),
        marks[1].display(),
        marks[2].display()
    );
    let node = Node::new();
    let file = node.env_file(&text);
    let outs: Vec<(PathBuf, Output)> = both_hooks()
        .into_iter()
        .map(|hook| {
            let out = node.run(&hook, &file);
            (hook, out)
        })
        .collect();
    for m in &marks {
        assert!(!m.exists(), "{} created: the file was run", m.display());
    }
    for (hook, out) in &outs {
        for why in [
            "line 1: ECOSCHED_POLICY: a shell expansion",
            "line 2: not KEY=VALUE",
            "line 3: not KEY=VALUE",
        ] {
            assert_exit_0_and_said(&node, hook, out, why);
        }
    }
    assert_eq!(
        node.read("calls"),
        "",
        "ecosched called with refused settings"
    );
}

#[test]
#[ignore = "live: root (runs the Slurm hooks as slurmd does)"]
fn an_unknown_key_is_refused() {
    refused(
        "ECOSCHED_POLICY=hilo\nLD_PRELOAD=/tmp/x.so\n",
        "line 2: unknown key",
    );
}

#[test]
#[ignore = "live: root (chown to another user)"]
fn a_settings_file_another_user_owns_is_not_used() {
    let node = Node::new();
    let file = node.env_file("ECOSCHED_POLICY=hilo\n");
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    for hook in both_hooks() {
        let out = node.run(&hook, &file);
        assert_exit_0_and_said(&node, &hook, &out, "owned by uid 65534, not root");
    }
    assert_eq!(
        node.read("calls"),
        "",
        "ecosched called with refused settings"
    );
}

#[test]
#[ignore = "live: root (runs the Slurm hooks as slurmd does)"]
fn a_settings_file_others_may_write_is_not_used() {
    for mode in [0o664, 0o646, 0o777] {
        let node = Node::new();
        let file = node.env_file("ECOSCHED_POLICY=hilo\n");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        for hook in both_hooks() {
            let out = node.run(&hook, &file);
            assert_exit_0_and_said(
                &node,
                &hook,
                &out,
                &format!("mode {mode:o}: writable by group or others"),
            );
        }
        assert_eq!(node.read("calls"), "", "mode {mode:o}: ecosched called");
    }
}

#[test]
#[ignore = "live: root (runs the Slurm hooks as slurmd does)"]
fn a_hook_copied_without_hook_common_exits_0_and_says_so() {
    let node = Node::new();
    let file = node.env_file("ECOSCHED_POLICY=hilo\n");
    let alone = tempfile::tempdir().unwrap();
    for hook in both_hooks() {
        let copy = alone.path().join(hook.file_name().unwrap());
        std::fs::copy(&hook, &copy).unwrap();
        let out = node.run(&copy, &file);
        assert_exit_0_and_said(
            &node,
            &copy,
            &out,
            &format!("{}/hook-common.sh", alone.path().display()),
        );
    }
    assert_eq!(node.read("calls"), "");
}

#[test]
#[ignore = "live: root (runs the Slurm hooks as slurmd does)"]
fn with_the_daemon_not_running_the_hooks_exit_0_and_log_the_failure() {
    let node = Node::new();
    let log = node.path("hook.log");
    let file = node.env_file(&format!(
        "ECOSCHED={}\nECOSCHED_SOCKET={}/%n.sock\nECOSCHED_LOG={}\nECOSCHED_TIMEOUT=2\n",
        ecosched_path().display(),
        node.dir.path().display(),
        log.display()
    ));
    for (hook, request) in both_hooks().iter().zip(["job-start", "job-end"]) {
        let out = node.run(hook, &file);
        assert_exit_0_and_said(&node, hook, &out, &format!("{request} failed (rc=1)"));
        let logged = node.read("hook.log");
        assert!(
            logged.contains(&format!("{request} node=n1 job=42 rc=1 ")),
            "{logged}"
        );
        assert!(logged.contains("n1.sock"), "{logged}");
    }
}

#[test]
#[ignore = "live: root (runs the Slurm hooks as slurmd does)"]
fn good_settings_are_read_as_data_and_the_hooks_call_ecosched() {
    let node = Node::new();
    let log = node.path("hook.log");
    let file = node.env_file(&format!(
        "# the node's settings\n\nECOSCHED_SOCKET=\"/run/eco %n.sock\"\n\
         ECOSCHED_CGROUP='/sys/fs/cgroup/cpuset/slurm_%n/uid_%u/job_%j'\n\
         ECOSCHED_POLICY=hilo-nospare\nECOSCHED_LOG={}\n",
        log.display()
    ));
    for hook in both_hooks() {
        let out = node.run(&hook, &file);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let calls = node.read("calls");
    assert_eq!(
        calls,
        "ctl --socket /run/eco n1.sock job-start 42 \
         /sys/fs/cgroup/cpuset/slurm_n1/uid_1000/job_42 --policy hilo-nospare\n\
         ctl --socket /run/eco n1.sock job-end --summary 42\n"
    );
    assert!(
        node.read("scontrol")
            .contains("update jobid=42 AdminComment=ecosched: energy_j=1.0"),
        "{}",
        node.read("scontrol")
    );
    let logged = node.read("hook.log");
    assert!(
        logged.contains("job-start node=n1 job=42 rc=0 "),
        "{logged}"
    );
    assert!(
        logged.contains("admin-comment node=n1 job=42 rc=0 "),
        "{logged}"
    );
    assert_eq!(node.read("syslog"), "", "nothing went wrong");
}
