//! Moving a running task to another simulated machine: the simulator's
//! stand-in for migrating a VM between nodes (Merkel et al., EuroSys'10,
//! §5.2, §8.4). The task leaves its machine at once, mid-instance,
//! and arrives on the other after the migration's downtime with the work
//! it had left, its phase, its identity and its instance's start, so its
//! run time spans both machines and the downtime. Its remaining
//! completions go with it: it keeps restarting where it now runs.

use super::{ns, Instance, Life, SimPlatform};
use crate::profile::Profile;
use crate::scenario::TaskSpec;
use ecosched_model::TaskId;
use std::sync::Arc;
use std::time::Duration;

/// A task between two machines.
#[derive(Debug, Clone)]
pub struct Migrant {
    /// Its identity, kept on the new machine.
    pub id: TaskId,
    /// Its line of the workload, narrowed to this one instance.
    spec: TaskSpec,
    profile: Arc<Profile>,
    /// Instructions of one whole instance.
    length: f64,
    /// Completions it still owes, the current one included.
    owed: u32,
    remaining: f64,
    phase: usize,
    phase_left: f64,
    nice: i32,
    /// When its current instance started, ns.
    started: u64,
}

impl Migrant {
    /// The task's name.
    pub fn name(&self) -> &str {
        self.spec.name.as_deref().unwrap_or(&self.spec.profile)
    }
}

impl SimPlatform {
    /// Take managed scenario task `id` off this machine now, as a
    /// migration does; `None` if it is not a live instance of a scenario
    /// task. It is reported once more, as exited without finishing.
    pub fn evict(&mut self, id: TaskId) -> Option<Migrant> {
        let t = self.order.iter().copied().find(|&t| {
            let task = &self.tasks[t];
            task.id == id && task.managed && !matches!(task.life, Life::Pending | Life::Exited)
        })?;
        let instance = self.tasks[t].instance?;
        if let Some(c) = self.sched[t].cpu {
            // Bring its work up to now before reading what is left.
            self.touch(c);
        }
        let mut spec = self.scenario.spec.tasks[instance.spec].clone();
        spec.name = Some(self.tasks[t].name.clone());
        spec.count = 1;
        spec.start_s = 0.0;
        spec.stagger_s = 0.0;
        let task = &self.tasks[t];
        let migrant = Migrant {
            id,
            spec,
            profile: task.profile.clone(),
            length: self.lengths[instance.spec],
            owed: self
                .owed
                .get(&(instance.spec, instance.k))
                .copied()
                .unwrap_or(1),
            remaining: task.remaining,
            phase: task.phase,
            phase_left: task.phase_left,
            nice: task.nice,
            started: task.started,
        };
        self.owed.insert((instance.spec, instance.k), 0);
        self.exit(t);
        // It left; it did not finish.
        self.tasks[t].finished = None;
        self.leave_cpu(t);
        Some(migrant)
    }

    /// Receive `m`, runnable after `downtime`.
    pub fn admit(&mut self, m: Migrant, downtime: Duration) {
        let spec = self.scenario.spec.tasks.len();
        let profile_name = m.spec.profile.clone();
        let ids = (0..m.profile.phases.len())
            .map(|k| {
                let next = self.phase_keys.len() as u32 + 1;
                *self
                    .phase_keys
                    .entry((profile_name.clone(), k))
                    .or_insert(next)
            })
            .collect();
        self.scenario
            .profiles
            .entry(profile_name)
            .or_insert_with(|| m.profile.clone());
        let name = m.name().to_string();
        self.scenario.spec.tasks.push(m.spec);
        self.lengths.push(m.length);
        self.owed.insert((spec, 0), m.owed);
        let at = self.now + ns(downtime.as_secs_f64());
        let slot = self.push_task(
            name,
            Some(Instance { spec, k: 0 }),
            true,
            m.nice,
            m.profile,
            ids,
            m.remaining,
            at,
        );
        let task = &mut self.tasks[slot];
        task.id = m.id;
        task.started = m.started;
        task.carried_start = true;
        task.phase = m.phase;
        task.phase_left = m.phase_left;
        self.tasks[slot].burst_left = self.burst(slot);
    }
}

#[cfg(test)]
mod tests {
    use crate::{Scenario, SimPlatform};
    use ecosched_model::{Plan, Platform, TaskState};
    use std::time::Duration;

    fn one(profile: &str, first_pid: u32) -> SimPlatform {
        let text = format!(
            "name = \"m\"\ndescription = \"d\"\nmachine = \"q6600\"\n[[tasks]]\nprofile = \"{profile}\"\nlength_s = 4\n"
        );
        let s = Scenario::from_toml("m.toml", &text, None).unwrap();
        let mut p = SimPlatform::numbered_from(&s, 1, first_pid).unwrap();
        p.apply(&Plan::unchanged()).unwrap();
        p
    }

    #[test]
    fn a_moved_task_keeps_its_identity_start_and_work() {
        let (mut a, mut b) = (one("aluadd", 1000), one("stream", 2_000_000));
        a.advance(Duration::from_secs(1)).unwrap();
        b.advance(Duration::from_secs(1)).unwrap();
        let id = a.observe().unwrap().tasks[0].id;
        b.observe().unwrap();
        let m = a.evict(id).unwrap();
        assert_eq!(m.name(), "aluadd");
        b.admit(m, Duration::from_secs(1));
        // It left A without finishing: reported once as exited, no finish.
        let gone = a.observe().unwrap();
        assert_eq!(gone.tasks[0].state, TaskState::Exited);
        assert_eq!(gone.tasks[0].finished_s, None);
        assert!(a.finished(), "A has nothing left to run");
        // In transit for the downtime, then on B under the same id.
        b.advance(Duration::from_millis(500)).unwrap();
        assert!(b.observe().unwrap().tasks.iter().all(|t| t.id != id));
        b.advance(Duration::from_secs(1)).unwrap();
        let there = b.observe().unwrap();
        let t = there.tasks.iter().find(|t| t.id == id).unwrap();
        assert_eq!(t.started_s, 0.0);
        assert_eq!(t.name, "aluadd");
        // It finishes its remaining ~3 s of work there (aluadd is not slowed
        // by stream), after its second of downtime: ~5 s after it started.
        b.advance(Duration::from_secs(10)).unwrap();
        let done = b.observe().unwrap();
        let t = done.tasks.iter().find(|t| t.id == id).unwrap();
        let end = t.finished_s.unwrap();
        assert!((end - 5.0).abs() < 0.2, "finished at {end}");
    }
}
