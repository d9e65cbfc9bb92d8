//! The baseline kernel scheduler (`docs/design/simulator.md`, "The kernel
//! scheduler"), the "Linux default" every paper compares against:
//!
//! - per-CPU run queues with weighted fair sharing: each task's virtual
//!   runtime advances at `1024 / weight`, weight ≈ 1024 · 1.25^−nice; the
//!   lowest virtual runtime runs next, for a slice of
//!   `max(latency · w / Σw, min_granularity)` rounded up to a tick; a task
//!   changing queues keeps its virtual runtime relative to the queues'
//!   floors, as CFS does;
//! - wake-up placement on the allowed CPU that has been idle longest, else
//!   the least loaded one (Richling's Problem A: new work lands on the
//!   coldest, slowest core); on a machine whose `wake_target` is
//!   `previous`, a task that slept goes back to its previous CPU or an
//!   idle one sharing its last-level cache instead (2.6.3x);
//! - on a machine whose `new_task_target` is `exec_balance`, a build job
//!   starts where 2.6.25's exec balancing puts it, judged by each CPU's
//!   load at its last tick, which a tickless idle CPU keeps
//!   ([`NewTaskTarget::ExecBalance`], `TickLoads`);
//! - count-based balancing up the topology (it looks at task counts only,
//!   Dhiman's point), plus pulling work when a CPU goes idle; on a machine
//!   whose `balance_by` is `weight`, both compare summed CFS weights as
//!   2.6.35 does (`Kernel::domain_pull`), and an idle CPU leaves cache-hot
//!   tasks alone. The count-based form is every preset's but the Opteron
//!   6134's: it stands in for the 2.6.2x kernels, whose balancer differs from
//!   2.6.35's (a group holds one task per CPU before `SD_PREFER_SIBLING`),
//!   and with 2.6.35's form those machines' validation rows fit worse.
//!   Balancing pulls work to a CPU, and a busy CPU balances only every
//!   `balance_interval · busy_factor` (`rebalance_domains` in
//!   kernel/sched.c), its `balance_interval` back at `sd_min_interval_ms`
//!   after a pass that pulled and doubling up to `sd_max_interval_ms` after
//!   one that did not (`load_balance`), so moves onto busy CPUs are much
//!   rarer than onto idle ones;
//! - affinity masks and cpusets always respected.
//!
//! The kernel holds only scheduling state; the platform owns the tasks and
//! calls in when something happens.

use crate::machine::{BalanceBy, Machine, NewTaskTarget, SchedSpec, WakeTarget};

/// Nanoseconds.
pub type Ns = u64;

/// The weight of a nice-0 task (`NICE_0_LOAD`, `SCHED_LOAD_SCALE`).
const NICE_0_LOAD: f64 = 1024.0;

/// CFS weight for a nice value (the kernel's table is 1024 · 1.25^−nice).
pub fn weight(nice: i32) -> f64 {
    NICE_0_LOAD * 1.25f64.powi(-nice)
}

/// Per-task scheduling state the kernel needs.
#[derive(Debug, Clone)]
pub struct Sched {
    /// Weight from nice.
    pub weight: f64,
    /// Virtual runtime, ns.
    pub vruntime: f64,
    /// CPUs it may use (dense indices, one flag per CPU).
    pub allowed: Vec<bool>,
    /// CPU it is queued on or last ran on.
    pub cpu: Option<usize>,
    /// Context switches so far.
    pub switches: u64,
    /// Migrations so far.
    pub migrations: u64,
    /// Creation order: breaks ties between equal candidates, so that which
    /// slot of the platform's task table a task occupies (slots are reused
    /// once exited tasks are pruned) never changes a decision.
    pub seq: u64,
    /// Since when it has waited in a run queue, if it is waiting now.
    pub queued_since: Option<Ns>,
    /// Run-queue wait accrued by finished waits, ns. Waiting is accounted
    /// when a task leaves a queue rather than per span, so an event costs
    /// nothing per waiting task; integer nanoseconds keep it exact.
    pub wait_ns: u64,
    /// When it last stopped running, ns (0 before it first ran).
    pub last_ran: Ns,
    /// The task that started it (a build job's `make`, an assembler's
    /// compile job), whose CPU exec balancing starts from.
    pub spawned_by: Option<usize>,
}

impl Sched {
    /// A task of `nice` that has not run yet, may use the CPUs flagged in
    /// `allowed`, and was created `seq`-th.
    pub fn new(nice: i32, allowed: Vec<bool>, seq: u64) -> Self {
        Sched {
            weight: weight(nice),
            vruntime: 0.0,
            allowed,
            cpu: None,
            switches: 0,
            migrations: 0,
            seq,
            queued_since: None,
            wait_ns: 0,
            last_ran: 0,
            spawned_by: None,
        }
    }

    /// Run-queue wait so far, including a wait still in progress at `now`.
    pub fn wait_at(&self, now: Ns) -> u64 {
        self.wait_ns + self.queued_since.map_or(0, |s| now.saturating_sub(s))
    }

    fn enter_queue(&mut self, now: Ns) {
        self.queued_since = Some(now);
    }

    fn leave_queue(&mut self, now: Ns) {
        if let Some(s) = self.queued_since.take() {
            self.wait_ns += now.saturating_sub(s);
        }
    }
}

/// A runnable task waiting in a run queue, with what picking the next
/// task compares. A waiting task's virtual runtime does not change, so
/// these are copied in when it joins rather than looked up in every
/// waiting task's `Sched` on every slice end.
#[derive(Debug, Clone, Copy)]
pub struct Waiting {
    /// The task.
    pub task: usize,
    vruntime: f64,
    /// `vruntime` as an integer that orders as `f64::total_cmp` does, so
    /// the pick compares integers.
    order: i64,
    weight: f64,
    seq: u64,
}

impl Waiting {
    fn of(s: &Sched, task: usize) -> Self {
        Waiting {
            task,
            vruntime: s.vruntime,
            order: total_order_key(s.vruntime),
            weight: s.weight,
            seq: s.seq,
        }
    }
}

/// An integer whose order is `f64::total_cmp`'s: the bits, with the
/// magnitude bits flipped for negative numbers.
fn total_order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

/// One CPU's run queue.
#[derive(Debug, Clone, Default)]
pub struct RunQueue {
    /// Running task.
    pub current: Option<usize>,
    /// Runnable tasks waiting.
    pub queue: Vec<Waiting>,
    /// When the current slice ends.
    pub slice_end: Ns,
    /// When the CPU last became idle.
    pub idle_since: Ns,
    /// Whether it ran nothing at the last pick (so a repeated empty pick
    /// does not restart `idle_since`).
    pub idle: bool,
    /// Floor of virtual runtimes on this queue.
    pub min_vruntime: f64,
}

impl RunQueue {
    /// Runnable tasks including the running one.
    pub fn nr(&self) -> usize {
        self.queue.len() + usize::from(self.current.is_some())
    }

    /// The summed weights of its runnable tasks (`rq->load.weight`).
    fn weight(&self, tasks: &[Sched]) -> f64 {
        self.queue.iter().map(|w| w.weight).sum::<f64>()
            + self.current.map_or(0.0, |t| tasks[t].weight)
    }
}

/// Scheduling state of the whole machine.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// Run queues by CPU.
    pub rqs: Vec<RunQueue>,
    spec: SchedSpec,
    tick: Ns,
    /// `1 / tick`, for rounding slice ends to ticks without dividing.
    per_tick: f64,
    /// Per-CPU loads (weights or counts) at the last balancing pass that
    /// found no imbalance anywhere: with the same loads, the next finds
    /// none either (loads are all it compares before picking a task).
    balanced: Vec<f64>,
    /// Per CPU: when it last balanced while busy (the start of its
    /// current stretched interval).
    busy_balanced_at: Vec<Ns>,
    /// Per domain (levels in order): passes in a row that found it
    /// imbalanced and moved nothing (`sd->nr_balance_failed`).
    failed: Vec<u32>,
    /// Per CPU: its `sd->balance_interval`, ms (one for all its levels).
    interval_ms: Vec<f64>,
    /// CPUs whose running task changed since [`Kernel::take_switched`]
    /// last emptied the list (each listed once: `switched_flag`).
    switched: Vec<usize>,
    switched_flag: Vec<bool>,
    /// Last-level cache of each CPU (wake-ups look for an idle sibling).
    llc_of: Vec<usize>,
    /// What exec balancing reads ([`NewTaskTarget::ExecBalance`] only).
    ticks: TickLoads,
}

/// Per CPU, the load its last scheduler tick saw (`rq->cpu_load[0]`,
/// which `update_cpu_load` sets to the run queue's weight on every tick),
/// kept without simulating ticks: a CPU's weight only changes when a task
/// joins or leaves its queue, so on each change the ticks since the last
/// one all saw the old weight. A busy CPU ticks every period. An idle one
/// does not (NO_HZ stops its tick as it enters idle), so its last tick's
/// load stays, however long it idles, except on the one idle CPU that
/// keeps ticking to balance for the others (`nohz.load_balancer`, claimed
/// by a CPU entering idle while none holds it, given up when it gets work
/// or at a tick of its own that finds every CPU idle:
/// `select_nohz_load_balancer`).
#[derive(Debug, Clone)]
struct TickLoads {
    /// The summed weight of each CPU's runnable tasks now.
    now: Vec<f64>,
    /// Since when `now` has held.
    since: Vec<Ns>,
    /// The load each CPU's last tick before `since` saw.
    at_tick: Vec<f64>,
    /// The idle load balancer, if any CPU is one.
    ilb: Option<usize>,
    /// Since when every CPU has idled, if they all do.
    all_idle_since: Option<Ns>,
}

impl Kernel {
    /// An idle machine.
    pub fn new(machine: &Machine, tick: Ns) -> Self {
        Kernel {
            rqs: vec![RunQueue::default(); machine.cpus()],
            spec: machine.spec.scheduler.clone(),
            tick,
            per_tick: 1.0 / tick as f64,
            balanced: Vec::new(),
            busy_balanced_at: vec![0; machine.cpus()],
            failed: vec![0; machine.sched_levels.iter().map(Vec::len).sum()],
            interval_ms: vec![machine.spec.scheduler.sd_min_interval_ms; machine.cpus()],
            switched: Vec::new(),
            switched_flag: vec![false; machine.cpus()],
            llc_of: machine.llc_of.clone(),
            ticks: TickLoads {
                now: vec![0.0; machine.cpus()],
                since: vec![0; machine.cpus()],
                at_tick: vec![0.0; machine.cpus()],
                ilb: None,
                all_idle_since: None,
            },
        }
    }

    /// The load CPU `c`'s last tick at or before `now` saw.
    fn last_tick_load(&self, c: usize, now: Ns) -> f64 {
        let t = &self.ticks;
        let ticking = t.now[c] > 0.0 || t.ilb == Some(c);
        if ticking && now / self.tick > t.since[c] / self.tick {
            t.now[c]
        } else {
            t.at_tick[c]
        }
    }

    /// Close CPU `c`'s span of constant load at `now`.
    fn settle_ticks(&mut self, c: usize, now: Ns) {
        self.ticks.at_tick[c] = self.last_tick_load(c, now);
        self.ticks.since[c] = now;
    }

    /// CPU `c`'s run queue changed at `now`: record its new weight and
    /// who balances for the idle CPUs.
    fn note_load(&mut self, tasks: &[Sched], c: usize, now: Ns) {
        if self.spec.new_task_target != NewTaskTarget::ExecBalance {
            return;
        }
        self.settle_ticks(c, now);
        let rq = &self.rqs[c];
        self.ticks.now[c] = rq.weight(tasks);
        if rq.nr() > 0 {
            self.end_all_idle(now);
            if self.ticks.ilb == Some(c) {
                self.ticks.ilb = None;
            }
        } else if self.rqs.iter().all(|rq| rq.nr() == 0) {
            self.ticks.all_idle_since.get_or_insert(now);
        } else if self.ticks.ilb.is_none() {
            self.ticks.ilb = Some(c);
        }
    }

    /// A CPU has work again at `now`: if every CPU idled through a tick of
    /// the idle load balancer, that tick ended its role (it finds every
    /// CPU in tickless idle and stops its own tick too).
    fn end_all_idle(&mut self, now: Ns) {
        let Some(t0) = self.ticks.all_idle_since.take() else {
            return;
        };
        let next_tick = (t0 / self.tick + 1) * self.tick;
        if let Some(o) = self.ticks.ilb.filter(|_| next_tick <= now) {
            self.settle_ticks(o, next_tick);
            self.ticks.ilb = None;
        }
    }

    /// Where exec balancing puts task `s`, started by a parent on CPU
    /// `parent` ([`NewTaskTarget::ExecBalance`]; 2.6.25's
    /// `sched_balance_self`, `find_idlest_group` and `find_idlest_cpu`).
    /// The task counts on its parent's CPU, where it runs `exec`. From the
    /// outermost domain in: the groups' mean loads, the parent's group by
    /// the lower (`source_load`) and the others by the higher
    /// (`target_load`) of each CPU's load now and at its last tick; the
    /// least loaded other group wins unless the local one is within half
    /// of `imbalance_pct` of it, and then its allowed CPU least loaded
    /// now (the first on a tie). After a move only the new CPU's smaller
    /// domains are tried.
    fn exec_target(&self, machine: &Machine, s: &Sched, parent: usize, now: Ns) -> usize {
        // Kept current on every queue change (`note_load`).
        let mut load = self.ticks.now.clone();
        load[parent] += s.weight;
        let imbalance = 100.0 + (self.spec.imbalance_pct - 100.0) / 2.0;
        let mut cpu = parent;
        let mut span_limit = usize::MAX;
        for level in machine.sched_levels.iter().rev() {
            let Some(domain) = level
                .iter()
                .find(|d| d.groups.iter().any(|g| g.contains(&cpu)))
            else {
                continue;
            };
            let span: usize = domain.groups.iter().map(Vec::len).sum();
            if span >= span_limit {
                continue;
            }
            let groups = &domain.groups;
            let Some(local) = groups.iter().position(|g| g.contains(&cpu)) else {
                continue;
            };
            let mut this_load = 0.0;
            let mut idlest: Option<(f64, usize)> = None;
            // From the local group on, as the kernel's circular list runs.
            for k in 0..groups.len() {
                let g = (local + k) % groups.len();
                if !groups[g].iter().any(|&i| s.allowed[i]) {
                    continue;
                }
                let sum: f64 = groups[g]
                    .iter()
                    .map(|&i| {
                        let tick = self.last_tick_load(i, now);
                        if g == local {
                            tick.min(load[i])
                        } else {
                            tick.max(load[i])
                        }
                    })
                    .sum();
                let avg = sum / groups[g].len() as f64;
                if g == local {
                    this_load = avg;
                } else if idlest.is_none_or(|(m, _)| avg < m) {
                    idlest = Some((avg, g));
                }
            }
            let Some((min_load, g)) = idlest else {
                continue;
            };
            if 100.0 * this_load < imbalance * min_load {
                continue;
            }
            let new = groups[g]
                .iter()
                .copied()
                .filter(|&i| s.allowed[i])
                .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)));
            if let Some(new) = new.filter(|&n| n != cpu) {
                cpu = new;
                span_limit = span;
            }
        }
        cpu
    }

    /// Note that CPU `c`'s running task changed.
    fn note_switch(&mut self, c: usize) {
        if !self.switched_flag[c] {
            self.switched_flag[c] = true;
            self.switched.push(c);
        }
    }

    /// Move the CPUs whose running task changed since the last call into
    /// `out` (emptied first), in the order they first changed.
    pub fn take_switched(&mut self, out: &mut Vec<usize>) {
        out.clear();
        for &c in &self.switched {
            self.switched_flag[c] = false;
        }
        std::mem::swap(out, &mut self.switched);
    }

    fn latency_ns(&self) -> f64 {
        self.spec.latency_ms * 1e6
    }

    /// Where a waking task goes. A new task (`fresh`), or any task under
    /// [`WakeTarget::IdleLongest`], goes to the allowed CPU idle longest,
    /// else the allowed CPU with the fewest runnable tasks (its previous
    /// CPU on a tie). Under [`WakeTarget::Previous`] a task that slept goes
    /// back to its previous CPU if that is idle, else to the first idle
    /// allowed CPU sharing its last-level cache, else to its previous CPU
    /// anyway (2.6.3x `select_idle_sibling`); a task whose previous CPU is
    /// no longer allowed is placed as a new one. Under
    /// [`NewTaskTarget::ExecBalance`] a new task whose parent's CPU it may
    /// use goes where exec balancing from that CPU puts it.
    pub fn select_cpu(
        &self,
        machine: &Machine,
        tasks: &[Sched],
        t: usize,
        fresh: bool,
        now: Ns,
    ) -> Option<usize> {
        let s = &tasks[t];
        if fresh && self.spec.new_task_target == NewTaskTarget::ExecBalance {
            let parent_cpu = s.spawned_by.and_then(|p| tasks[p].cpu);
            if let Some(p) = parent_cpu.filter(|&p| s.allowed[p]) {
                return Some(self.exec_target(machine, s, p, now));
            }
        }
        if !fresh && self.spec.wake_target == WakeTarget::Previous {
            if let Some(p) = s.cpu.filter(|&p| s.allowed[p]) {
                if self.rqs[p].nr() == 0 {
                    return Some(p);
                }
                let sibling = (0..self.rqs.len()).find(|&c| {
                    s.allowed[c] && self.llc_of[c] == self.llc_of[p] && self.rqs[c].nr() == 0
                });
                return Some(sibling.unwrap_or(p));
            }
        }
        // One pass for both candidates (this runs on every wake-up).
        let mut idle: Option<(Ns, usize)> = None;
        let mut least: Option<(usize, usize, usize)> = None;
        for (c, rq) in self.rqs.iter().enumerate() {
            if !s.allowed[c] {
                continue;
            }
            let nr = rq.nr();
            let key = (rq.idle_since, c);
            if nr == 0 && !matches!(idle, Some(best) if best <= key) {
                idle = Some(key);
            }
            let key = (nr, usize::from(Some(c) != s.cpu), c);
            if !matches!(least, Some(best) if best <= key) {
                least = Some(key);
            }
        }
        idle.map(|(_, c)| c).or(least.map(|(_, _, c)| c))
    }

    /// Put a runnable task on CPU `c`. Returns true if `c`'s current task
    /// should be preempted now (the CPU was idle, or the wakee is far behind).
    pub fn enqueue(
        &mut self,
        tasks: &mut [Sched],
        t: usize,
        c: usize,
        now: Ns,
        fresh: bool,
    ) -> bool {
        let latency = self.latency_ns();
        let s = &mut tasks[t];
        if let Some(prev) = s.cpu {
            if prev != c {
                s.migrations += 1;
                // Virtual runtime is relative to its queue's floor: a task
                // moving between queues keeps its lead or lag, not the
                // absolute figure (CFS subtracts the old queue's
                // min_vruntime on leaving and adds the new one's on
                // arriving). Queues of different weights advance at very
                // different speeds, so an absolute figure carried over
                // would starve a task behind a slow queue's floor.
                s.vruntime += self.rqs[c].min_vruntime - self.rqs[prev].min_vruntime;
            }
        }
        let rq = &mut self.rqs[c];
        s.cpu = Some(c);
        // New tasks start at the queue's floor; sleepers get at most half a
        // latency of credit (CFS's place_entity).
        s.vruntime = if fresh {
            rq.min_vruntime
        } else {
            s.vruntime.max(rq.min_vruntime - latency / 2.0)
        };
        s.enter_queue(now);
        rq.queue.push(Waiting::of(s, t));
        let preempt = match rq.current {
            None => {
                rq.slice_end = now;
                true
            }
            Some(cur) => {
                let gran = 1e6 * NICE_0_LOAD / s.weight;
                tasks[t].vruntime + gran < tasks[cur].vruntime
            }
        };
        self.note_load(tasks, c, now);
        preempt
    }

    /// Remove a task from wherever it is queued or running on CPU `c` at
    /// `now`. Returns true if it was the running task.
    pub fn dequeue(&mut self, tasks: &mut [Sched], t: usize, c: usize, now: Ns) -> bool {
        let rq = &mut self.rqs[c];
        let was_running = rq.current == Some(t);
        if was_running {
            rq.current = None;
            tasks[t].last_ran = now;
            self.note_switch(c);
        } else if let Some(i) = rq.queue.iter().position(|w| w.task == t) {
            rq.queue.remove(i);
            tasks[t].leave_queue(now);
        }
        self.note_load(tasks, c, now);
        was_running
    }

    /// Pick the next task on CPU `c` (the current one, if any, goes back in
    /// the queue first). Returns the newly running task.
    pub fn pick_next(&mut self, tasks: &mut [Sched], c: usize, now: Ns) -> Option<usize> {
        let (latency, min_gran, tick, per_tick) = (
            self.latency_ns(),
            self.spec.min_granularity_ms * 1e6,
            self.tick,
            self.per_tick,
        );
        let rq = &mut self.rqs[c];
        let was = rq.current;
        if let Some(cur) = rq.current.take() {
            tasks[cur].last_ran = now;
            tasks[cur].enter_queue(now);
            rq.queue.push(Waiting::of(&tasks[cur], cur));
        }
        // One pass over the queue (this runs on every slice end): the
        // lowest (virtual runtime, creation order) and the total weight.
        // The winner's virtual runtime is also the queue's lowest.
        let mut best: Option<(usize, Waiting)> = None;
        let mut total_w = 0.0;
        for (i, &w) in rq.queue.iter().enumerate() {
            total_w += w.weight;
            let better = match best {
                None => true,
                Some((_, b)) => (w.order, w.seq) < (b.order, b.seq),
            };
            if better {
                best = Some((i, w));
            }
        }
        let Some((
            i,
            Waiting {
                task: t, vruntime, ..
            },
        )) = best
        else {
            if !rq.idle {
                rq.idle = true;
                rq.idle_since = now;
            }
            if was.is_some() {
                self.note_switch(c);
            }
            return None;
        };
        rq.idle = false;
        rq.queue.swap_remove(i);
        tasks[t].leave_queue(now);
        let slice = (latency * tasks[t].weight / total_w).max(min_gran);
        rq.slice_end = tick_at_or_after(now + slice as Ns, tick, per_tick);
        rq.current = Some(t);
        rq.min_vruntime = rq.min_vruntime.max(vruntime);
        if was != Some(t) {
            self.note_switch(c);
        }
        Some(t)
    }

    /// When CPU `c` goes idle, pull a waiting task. Returns (task, from).
    ///
    /// By weight (2.6.35 `idle_balance`): domain by domain from the
    /// innermost, `c`'s own group pulls from the busiest one as periodic
    /// balancing would (`Kernel::domain_pull`), taking only a waiting
    /// task that is not cache-hot (off a CPU less than `migration_cost_ms`
    /// ago, `task_hot`). By count: from the busiest CPU that has a waiting
    /// task `c` may take.
    pub fn idle_pull(
        &self,
        machine: &Machine,
        tasks: &[Sched],
        c: usize,
        now: Ns,
    ) -> Option<(usize, usize)> {
        if self.spec.balance_by == BalanceBy::Count {
            return self.idle_pull_by_count(tasks, c);
        }
        // Most calls find nothing `c` could take: no need to weigh loads.
        let takeable = |rq: &RunQueue| rq.queue.iter().any(|w| tasks[w.task].allowed[c]);
        if !self.rqs.iter().any(takeable) {
            return None;
        }
        let nr: Vec<usize> = self.rqs.iter().map(RunQueue::nr).collect();
        let load = self.weighted_loads(tasks);
        let hot = (self.spec.migration_cost_ms * 1e6) as Ns;
        for domain in machine.sched_levels.iter().flatten() {
            let Some(local) = domain.groups.iter().position(|g| g.contains(&c)) else {
                continue;
            };
            let Some(pull) = self.domain_pull(&domain.groups, &nr, &load, Some(local)) else {
                continue;
            };
            let sources = most_loaded_first(domain.groups[pull.from].iter().copied(), &load);
            let pick = sources.iter().find_map(|&from| {
                self.rqs[from]
                    .queue
                    .iter()
                    .filter(|w| {
                        let t = &tasks[w.task];
                        t.allowed[c]
                            && w.weight / 2.0 <= pull.imbalance
                            && now.saturating_sub(t.last_ran) >= hot
                    })
                    .min_by_key(|w| w.seq)
                    .map(|w| (w.task, from))
            });
            if pick.is_some() {
                return pick;
            }
        }
        None
    }

    /// [`Kernel::idle_pull`] by task counts.
    fn idle_pull_by_count(&self, tasks: &[Sched], c: usize) -> Option<(usize, usize)> {
        (0..self.rqs.len())
            .filter(|&o| o != c && !self.rqs[o].queue.is_empty())
            .filter_map(|o| {
                let t = self.rqs[o]
                    .queue
                    .iter()
                    .filter(|w| tasks[w.task].allowed[c])
                    .min_by_key(|w| w.seq)?
                    .task;
                Some((self.rqs[o].nr(), o, t))
            })
            .max_by_key(|&(nr, o, _)| (nr, std::cmp::Reverse(o)))
            .map(|(_, o, t)| (t, o))
    }

    /// Per CPU: the summed weights of its runnable tasks.
    fn weighted_loads(&self, tasks: &[Sched]) -> Vec<f64> {
        self.rqs.iter().map(|rq| rq.weight(tasks)).collect()
    }

    /// One round of periodic balancing over every level of the machine,
    /// innermost first, at `now`: in each domain, the least loaded group
    /// pulls one task from the busiest (`Kernel::domain_pull` says whether
    /// and how much). A move pulls a task to an idle CPU, or to a busy one
    /// whose stretched interval (its `balance_interval · busy_factor`) has
    /// run out. Returns the moves as (task, from, to); the caller carries
    /// them out (a running task moved is an active balance).
    pub fn balance(
        &mut self,
        machine: &Machine,
        tasks: &[Sched],
        now: Ns,
    ) -> Vec<(usize, usize, usize)> {
        let by_weight = self.spec.balance_by == BalanceBy::Weight;
        let mut nr: Vec<usize> = self.rqs.iter().map(RunQueue::nr).collect();
        let mut load: Vec<f64> = if by_weight {
            self.weighted_loads(tasks)
        } else {
            nr.iter().map(|&n| n as f64).collect()
        };
        let mut moves = Vec::new();
        if load == self.balanced {
            return moves;
        }
        // Which CPUs balance in this pass: the idle ones, and the busy
        // ones whose stretched interval has run out (they start a new one).
        let busy: Vec<bool> = nr.iter().map(|&n| n > 0).collect();
        let mut due = vec![true; nr.len()];
        for (c, d) in due.iter_mut().enumerate() {
            if busy[c] {
                let stretched = (self.interval_ms[c] * self.spec.busy_factor * 1e6) as Ns;
                *d = now >= self.busy_balanced_at[c] + stretched;
                if *d {
                    self.busy_balanced_at[c] = now;
                }
            }
        }
        let mut imbalanced = false;
        // Moves per pass are few (at most one per domain), so a list beats
        // a flag per task.
        let mut moved: Vec<usize> = Vec::new();
        let domains = machine.sched_levels.iter().flatten();
        for (d, domain) in domains.enumerate() {
            let Some(pull) = self.domain_pull(&domain.groups, &nr, &load, None) else {
                continue;
            };
            imbalanced = true;
            let by_load = |a: &usize, b: &usize| load[*a].total_cmp(&load[*b]).then(a.cmp(b));
            let Some(&to) = domain.groups[pull.to]
                .iter()
                .filter(|&&c| due[c])
                .min_by(|a, b| by_load(a, b))
            else {
                continue;
            };
            // The most loaded CPU first, skipping one whose only task
            // outweighs the imbalance (`find_busiest_queue`).
            let sources = most_loaded_first(
                domain.groups[pull.from]
                    .iter()
                    .copied()
                    .filter(|&c| !(nr[c] == 1 && load[c] > pull.imbalance)),
                &load,
            );
            // A task more than twice the imbalance stays (`move_tasks`).
            let movable = |t: usize| {
                tasks[t].allowed[to]
                    && !moved.contains(&t)
                    && (!by_weight || tasks[t].weight / 2.0 <= pull.imbalance)
            };
            let queued = |from: usize| {
                self.rqs[from]
                    .queue
                    .iter()
                    .filter(|w| movable(w.task))
                    .min_by_key(|w| w.seq)
                    .map(|w| (w.task, from))
            };
            let running = |from: usize| {
                let rq = &self.rqs[from];
                rq.current
                    .filter(|&t| movable(t) && rq.queue.is_empty())
                    .map(|t| (t, from))
            };
            let pick = if by_weight {
                // A running task cannot be pulled; it is pushed (active
                // balance) only once `cache_nice_tries + 2` passes in a
                // row have found the imbalance and moved nothing.
                let failed = &mut self.failed[d];
                match sources.iter().find_map(|&c| queued(c)) {
                    Some(p) => {
                        *failed = 0;
                        Some(p)
                    }
                    None => {
                        *failed += 1;
                        let pushed = (*failed > self.spec.cache_nice_tries + 2)
                            .then(|| sources.iter().find_map(|&c| running(c)))
                            .flatten();
                        if pushed.is_some() {
                            *failed = 0;
                        }
                        pushed
                    }
                }
            } else {
                sources.iter().find_map(|&c| queued(c).or(running(c)))
            };
            if let Some((t, from)) = pick {
                let w = if by_weight { tasks[t].weight } else { 1.0 };
                moved.push(t);
                nr[from] -= 1;
                nr[to] += 1;
                load[from] -= w;
                load[to] += w;
                moves.push((t, from, to));
            }
        }
        // A busy CPU that balanced starts over at the shortest interval if
        // it pulled work, else backs off (`load_balance`).
        let (lo, hi) = (self.spec.sd_min_interval_ms, self.spec.sd_max_interval_ms);
        for c in (0..due.len()).filter(|&c| busy[c] && due[c]) {
            self.interval_ms[c] = if moves.iter().any(|&(_, _, to)| to == c) {
                lo
            } else {
                (2.0 * self.interval_ms[c]).min(hi)
            };
        }
        self.balanced = if imbalanced { Vec::new() } else { load };
        moves
    }

    /// Whether a domain is out of balance, and which group should pull from
    /// which. `load` is per CPU: summed weights, or task counts under
    /// [`BalanceBy::Count`] (which moves when the busiest group has at
    /// least two tasks more than the least loaded, whatever their weights).
    ///
    /// By weight this follows 2.6.35's `find_busiest_group`: loads are
    /// per CPU of a group; the busiest group must hold more than one task
    /// (a group's capacity is one task: single CPUs, and above the
    /// multi-core level `SD_PREFER_SIBLING` caps it at one); nothing moves
    /// unless the local group is below the domain's average and the
    /// busiest exceeds it by `imbalance_pct`. The imbalance is what
    /// `calculate_imbalance` allows, or one of the busiest group's average
    /// tasks if that narrows the gap (`fix_small_imbalance`; its throughput
    /// test, which matters only between CPUs of unequal power, is left out).
    fn domain_pull(
        &self,
        groups: &[Vec<usize>],
        nr: &[usize],
        load: &[f64],
        local: Option<usize>,
    ) -> Option<Pull> {
        let stats: Vec<GroupLoad> = groups
            .iter()
            .map(|g| GroupLoad {
                load: g.iter().map(|&c| load[c]).sum(),
                nr: g.iter().map(|&c| nr[c]).sum::<usize>() as f64,
                cpus: g.len() as f64,
            })
            .collect();
        if self.spec.balance_by == BalanceBy::Count {
            let total = |i: usize| stats[i].load;
            let to =
                (0..stats.len()).min_by(|&a, &b| total(a).total_cmp(&total(b)).then(a.cmp(&b)))?;
            let from =
                (0..stats.len()).max_by(|&a, &b| total(a).total_cmp(&total(b)).then(b.cmp(&a)))?;
            return (stats[from].load >= stats[to].load + 2.0).then_some(Pull {
                from,
                to,
                imbalance: f64::INFINITY,
            });
        }
        let per_cpu = |i: usize| stats[i].load / stats[i].cpus;
        let prefer_sibling = self.spec.prefer_sibling;
        let capacity = |g: &GroupLoad| if prefer_sibling { 1.0 } else { g.cpus };
        let to = match local {
            Some(l) => l,
            None => (0..stats.len())
                .min_by(|&a, &b| per_cpu(a).total_cmp(&per_cpu(b)).then(a.cmp(&b)))?,
        };
        let from = (0..stats.len())
            .filter(|&i| i != to && stats[i].nr > capacity(&stats[i]))
            .max_by(|&a, &b| per_cpu(a).total_cmp(&per_cpu(b)).then(b.cmp(&a)))?;
        let (b, l) = (&stats[from], &stats[to]);
        let avg =
            stats.iter().map(|g| g.load).sum::<f64>() / stats.iter().map(|g| g.cpus).sum::<f64>();
        let (this, max) = (per_cpu(to), per_cpu(from));
        if this >= max || this >= avg || 100.0 * max <= self.spec.imbalance_pct * this {
            return None;
        }
        // Load beyond the busiest group's capacity of one task.
        let above = (b.nr - capacity(b)) * NICE_0_LOAD / b.cpus;
        let mut imbalance = ((max - avg).min(above) * b.cpus).min((avg - this) * l.cpus);
        let busiest_per_task = b.load / b.nr;
        if imbalance < busiest_per_task {
            let scaled = busiest_per_task / b.cpus;
            let imbn = if l.nr > 0.0 && busiest_per_task > l.load / l.nr {
                1.0
            } else {
                2.0
            };
            if max - this + scaled < scaled * imbn {
                return None;
            }
            imbalance = busiest_per_task;
        }
        Some(Pull {
            from,
            to,
            imbalance,
        })
    }
}

/// `cpus`, the most loaded first (ties in CPU order): where balancing
/// looks for a task to take (`find_busiest_queue`).
fn most_loaded_first(cpus: impl Iterator<Item = usize>, load: &[f64]) -> Vec<usize> {
    let mut cpus: Vec<usize> = cpus.collect();
    cpus.sort_by(|a, b| load[*b].total_cmp(&load[*a]).then(a.cmp(b)));
    cpus
}

/// A group's share of a balancing decision.
struct GroupLoad {
    /// Summed load of its CPUs.
    load: f64,
    /// Runnable tasks on its CPUs.
    nr: f64,
    /// Its CPUs.
    cpus: f64,
}

/// A domain's balancing decision: group `to` pulls from group `from` a
/// task of weight at most twice `imbalance`.
struct Pull {
    from: usize,
    to: usize,
    imbalance: f64,
}

/// The first tick boundary at or after `x` (`x.div_ceil(tick) * tick`),
/// given `per_tick` = 1 / `tick`. A 64-bit division costs tens of cycles
/// and this runs on every slice end, so below 2^52 ns (where the float
/// estimate of the quotient is within one of the true one) the estimate
/// is corrected with multiplications.
fn tick_at_or_after(x: Ns, tick: Ns, per_tick: f64) -> Ns {
    const EXACT: Ns = 1 << 52;
    if x >= EXACT || tick >= EXACT {
        return x.div_ceil(tick) * tick;
    }
    let mut q = (x as i64 as f64 * per_tick) as i64 as Ns;
    while q * tick < x {
        q += 1;
    }
    while q > 0 && (q - 1) * tick >= x {
        q -= 1;
    }
    q * tick
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_rounding_matches_division() {
        for tick in [1, 3, 1_000_000, 4_000_000, 999_999_937] {
            for base in [
                0u64,
                1,
                2_999_999,
                3_600_000_000_000,
                (1 << 52) - 5,
                1 << 53,
            ] {
                for x in base..base + 5 {
                    assert_eq!(
                        tick_at_or_after(x, tick, 1.0 / tick as f64),
                        x.div_ceil(tick) * tick,
                        "{x} {tick}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_order_key_orders_as_total_cmp() {
        let xs = [
            f64::NEG_INFINITY,
            -1e9,
            -1.5,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            1.0,
            1.0 + f64::EPSILON,
            3.5e12,
            f64::INFINITY,
        ];
        for a in xs {
            for b in xs {
                assert_eq!(
                    total_order_key(a).cmp(&total_order_key(b)),
                    a.total_cmp(&b),
                    "{a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn nice_weights_follow_the_kernel_table() {
        assert_eq!(weight(0), 1024.0);
        assert!((weight(1) - 819.2).abs() < 1e-9);
        assert!((weight(-5) / weight(0) - 3.0517578125).abs() < 1e-9);
    }

    /// Wake-up placement needs the moment a CPU went idle, not the last
    /// time the platform asked an idle CPU for work (Richling's Problem A
    /// depends on new work landing on the CPU idle longest).
    #[test]
    fn idle_since_is_when_the_cpu_went_idle() {
        let machine = crate::scenario::preset("opteron-2352").unwrap().unwrap();
        let mut k = Kernel::new(&machine, 1_000_000);
        let mut tasks = vec![sched(0, 0, 8)];
        for c in 0..8 {
            assert_eq!(k.pick_next(&mut tasks, c, 0), None);
        }
        k.enqueue(&mut tasks, 0, 0, 5, true);
        assert_eq!(k.pick_next(&mut tasks, 0, 5), Some(0));
        k.dequeue(&mut tasks, 0, 0, 10);
        assert_eq!(k.pick_next(&mut tasks, 0, 10), None);
        // Asking the idle CPUs again later changes nothing …
        for c in 0..8 {
            k.pick_next(&mut tasks, c, 20);
        }
        assert_eq!(k.rqs[0].idle_since, 10);
        assert_eq!(k.rqs[3].idle_since, 0);
        // … so the next wake-up goes to a CPU idle since the start.
        assert_eq!(k.select_cpu(&machine, &tasks, 0, true, 0), Some(1));
    }

    /// A busy CPU pulls work only every `balance_interval · busy_factor`
    /// (`rebalance_domains`): with one task on every CPU of the Opteron
    /// and two more on CPU 0, the 8 ms pass moves nothing, the pass at
    /// 1 ms · 64 does; with a busy factor of 1 the first pass moves.
    #[test]
    fn busy_cpus_balance_only_every_busy_factor_periods() {
        let setup = |busy_factor: f64| {
            let mut spec = crate::scenario::preset("opteron-2352")
                .unwrap()
                .unwrap()
                .spec;
            spec.scheduler.busy_factor = busy_factor;
            let machine = Machine::build(spec).unwrap();
            let mut k = Kernel::new(&machine, 1_000_000);
            let mut tasks: Vec<Sched> = (0..10).map(|seq| sched(0, seq, 8)).collect();
            for t in 0..10 {
                k.enqueue(&mut tasks, t, t.saturating_sub(2), 0, true);
            }
            for c in 0..8 {
                k.pick_next(&mut tasks, c, 0);
            }
            (machine, k, tasks)
        };
        let ms = 1_000_000;
        let (machine, mut k, tasks) = setup(64.0);
        assert!(k.balance(&machine, &tasks, 8 * ms).is_empty());
        assert!(k.balance(&machine, &tasks, 56 * ms).is_empty());
        let moves = k.balance(&machine, &tasks, 64 * ms);
        assert!(moves.iter().all(|&(_, from, _)| from == 0), "{moves:?}");
        assert!(!moves.is_empty());
        // Every CPU balanced: those that pulled start over at 1 ms, the
        // others back off to 2 ms.
        for c in 0..8 {
            let pulled = moves.iter().any(|&(_, _, to)| to == c);
            assert_eq!(k.interval_ms[c], if pulled { 1.0 } else { 2.0 }, "cpu {c}");
        }
        let (machine, mut k, tasks) = setup(1.0);
        assert!(!k.balance(&machine, &tasks, 8 * ms).is_empty());
    }

    /// A task moved from a queue whose floor is far
    /// ahead (low-weight tasks advance it fast) to one whose floor is far
    /// behind keeps its lag relative to the floor, so it runs at once
    /// instead of waiting until the slow queue catches up.
    #[test]
    fn a_moved_task_keeps_its_virtual_runtime_relative_to_the_floor() {
        let machine = crate::scenario::preset("opteron-2352").unwrap().unwrap();
        let mut k = Kernel::new(&machine, 1_000_000);
        let mut tasks = vec![sched(-16, 0, 8), sched(-10, 1, 8)];
        k.rqs[0].min_vruntime = 9e9;
        k.rqs[1].min_vruntime = 1e6;
        k.enqueue(&mut tasks, 0, 0, 0, true);
        assert_eq!(k.pick_next(&mut tasks, 0, 0), Some(0));
        tasks[0].vruntime += 2e6; // it ran 2 ms of virtual time ahead
        k.enqueue(&mut tasks, 1, 1, 0, true);
        assert_eq!(k.pick_next(&mut tasks, 1, 0), Some(1));
        tasks[1].vruntime += 5e6;
        // The balancer moves the running task to CPU 1.
        assert!(k.dequeue(&mut tasks, 0, 0, 10));
        k.enqueue(&mut tasks, 0, 1, 10, false);
        assert_eq!(tasks[0].vruntime, 1e6 + 2e6);
        assert_eq!(tasks[0].migrations, 1);
        // Behind CPU 1's running task (at 6e6), so it preempts it.
        assert_eq!(k.pick_next(&mut tasks, 1, 10), Some(0));
    }

    /// A runnable-to-be task of `nice` that may use every CPU of `cpus`.
    fn sched(nice: i32, seq: u64, cpus: usize) -> Sched {
        Sched::new(nice, vec![true; cpus], seq)
    }

    /// The Opteron 6134 preset (2.6.35's scheduler) with `edit` applied.
    fn opteron_6134(edit: impl Fn(&mut SchedSpec)) -> Machine {
        let mut spec = crate::scenario::preset("opteron-6134")
            .unwrap()
            .unwrap()
            .spec;
        edit(&mut spec.scheduler);
        Machine::build(spec).unwrap()
    }

    /// 2.6.35's wake-up target: the previous CPU if idle, else the first
    /// idle CPU sharing its last-level cache, else the previous CPU even
    /// with the other die idle; a new task still goes to the CPU idle
    /// longest. Under `idle_longest` a sleeper is placed like a new task.
    #[test]
    fn a_woken_task_returns_to_its_previous_cpu_or_an_idle_cache_sibling() {
        let machine = opteron_6134(|_| {});
        assert_eq!(machine.spec.scheduler.wake_target, WakeTarget::Previous);
        let mut k = Kernel::new(&machine, 1_000_000);
        let mut tasks: Vec<Sched> = (0..5).map(|seq| sched(0, seq, 8)).collect();
        for c in 0..8 {
            k.pick_next(&mut tasks, c, 0);
        }
        let (prev, llc) = (1, machine.llc_of[1]);
        let siblings: Vec<usize> = (0..8).filter(|&c| machine.llc_of[c] == llc).collect();
        assert_eq!(siblings.len(), 4);
        tasks[0].cpu = Some(prev);
        assert_eq!(k.select_cpu(&machine, &tasks, 0, false, 0), Some(prev));
        // Busy previous CPU: the first idle sibling.
        let busy = |k: &mut Kernel, tasks: &mut Vec<Sched>, t: usize, c: usize| {
            k.enqueue(tasks, t, c, 10, true);
            k.pick_next(tasks, c, 10);
        };
        busy(&mut k, &mut tasks, 1, prev);
        let first_idle = siblings.iter().copied().find(|&c| c != prev);
        assert_eq!(k.select_cpu(&machine, &tasks, 0, false, 0), first_idle);
        // Every sibling busy: the previous CPU, though the other die idles.
        for (t, &c) in (2..).zip(siblings.iter().filter(|&&c| c != prev)) {
            busy(&mut k, &mut tasks, t, c);
        }
        assert_eq!(k.select_cpu(&machine, &tasks, 0, false, 0), Some(prev));
        let fresh = k.select_cpu(&machine, &tasks, 0, true, 0).unwrap();
        assert_ne!(machine.llc_of[fresh], llc, "a new task goes to an idle CPU");
        let mut idle_longest = k.clone();
        idle_longest.spec.wake_target = WakeTarget::IdleLongest;
        assert_eq!(
            idle_longest.select_cpu(&machine, &tasks, 0, false, 0),
            Some(fresh)
        );
    }

    /// Weighted balancing moves load, not tasks: with three nice-19 tasks
    /// on CPU 0 (45 of load), two nice −10 tasks on CPU 1 (19,096) and one
    /// nice-0 task on each other CPU, CPU 0 pulls CPU 1's waiting task;
    /// counting tasks, CPU 0 is the busiest and gives one away instead.
    #[test]
    fn weighted_balancing_moves_load_where_counting_moves_tasks() {
        let setup = |by: BalanceBy| {
            let machine = opteron_6134(|s| {
                s.balance_by = by;
                s.busy_factor = 1.0;
            });
            let mut k = Kernel::new(&machine, 1_000_000);
            let mut tasks: Vec<Sched> = (0..11)
                .map(|seq| {
                    let nice = match seq {
                        0..=2 => 19,
                        3 | 4 => -10,
                        _ => 0,
                    };
                    sched(nice, seq, 8)
                })
                .collect();
            let cpu_of = [0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7];
            for (t, &c) in cpu_of.iter().enumerate() {
                k.enqueue(&mut tasks, t, c, 0, true);
            }
            for c in 0..8 {
                k.pick_next(&mut tasks, c, 0);
            }
            let moves = k.balance(&machine, &tasks, 8_000_000);
            (moves, k.rqs[1].current)
        };
        let (moves, running) = setup(BalanceBy::Weight);
        let waiting_heavy = 7 - running.unwrap(); // tasks 3 and 4 are on CPU 1
        assert_eq!(moves.first(), Some(&(waiting_heavy, 1, 0)), "{moves:?}");
        let (moves, _) = setup(BalanceBy::Count);
        assert!(moves.iter().any(|&(_, from, _)| from == 0), "{moves:?}");
        assert!(moves.iter().all(|&(_, from, _)| from != 1), "{moves:?}");
    }

    /// An idle CPU does not pull a task that left a CPU less than
    /// `migration_cost_ms` ago (cache-hot, `task_hot`), and does once it
    /// has cooled.
    #[test]
    fn an_idle_cpu_leaves_a_cache_hot_task_where_it_is() {
        let machine = opteron_6134(|_| {});
        let mut k = Kernel::new(&machine, 1_000_000);
        let mut tasks: Vec<Sched> = (0..2).map(|seq| sched(0, seq, 8)).collect();
        for c in 0..8 {
            k.pick_next(&mut tasks, c, 0);
        }
        k.enqueue(&mut tasks, 0, 0, 0, true);
        k.pick_next(&mut tasks, 0, 0);
        k.enqueue(&mut tasks, 1, 0, 0, true);
        let ms = 1_000_000;
        // Task 0 ran until 10 ms, then task 1 took CPU 0.
        let now = 10 * ms;
        tasks[0].vruntime = 10e6;
        assert_eq!(k.pick_next(&mut tasks, 0, now), Some(1));
        assert_eq!(tasks[0].last_ran, now);
        assert_eq!(k.idle_pull(&machine, &tasks, 1, now + ms / 10), None);
        assert_eq!(k.idle_pull(&machine, &tasks, 1, now + ms), Some((0, 0)));
    }

    /// Exec balancing (2.6.25) reads each CPU's load at its last tick: an
    /// idle CPU whose last tick saw a task looks as loaded as `make`'s
    /// own, so a job stays beside `make`, except that the idle load
    /// balancer keeps ticking and looks idle. On the Phenom 9750 (one
    /// domain of four cores, 1 ms ticks): CPUs 1–3 run a task each
    /// through a few ticks and go idle in that order (CPU 1 becomes the
    /// balancer); CPU 1 then runs briefly again and goes idle last, taking
    /// the role back. A job `make` (running on CPU 0) starts at 20 ms goes
    /// to CPU 1: not CPU 2, idle longest, nor `make`'s CPU 0.
    #[test]
    fn exec_balancing_sends_a_job_to_the_idle_cpu_that_still_ticks() {
        let machine = crate::scenario::preset("phenom-9750").unwrap().unwrap();
        assert_eq!(
            machine.spec.scheduler.new_task_target,
            NewTaskTarget::ExecBalance
        );
        let ms = 1_000_000;
        let mut k = Kernel::new(&machine, ms);
        let mut tasks: Vec<Sched> = (0..6).map(|seq| sched(0, seq, 4)).collect();
        for (t, c) in [(0, 0), (1, 1), (2, 2), (3, 3)] {
            k.enqueue(&mut tasks, t, c, 0, true);
            k.pick_next(&mut tasks, c, 0);
        }
        for (t, c) in [(1, 1), (2, 2), (3, 3)] {
            k.dequeue(&mut tasks, t, c, 5 * ms + ms / 2);
            k.pick_next(&mut tasks, c, 5 * ms + ms / 2);
        }
        assert_eq!(k.ticks.ilb, Some(1));
        k.enqueue(&mut tasks, 4, 1, 8 * ms, false);
        k.pick_next(&mut tasks, 1, 8 * ms);
        assert_eq!(k.ticks.ilb, None, "a balancer with work gives the role up");
        k.dequeue(&mut tasks, 4, 1, 9 * ms + ms / 2);
        k.pick_next(&mut tasks, 1, 9 * ms + ms / 2);
        assert_eq!(k.ticks.ilb, Some(1));
        tasks[5].spawned_by = Some(0);
        tasks[5].cpu = None;
        assert_eq!(k.last_tick_load(2, 20 * ms), 1024.0);
        assert_eq!(k.last_tick_load(1, 20 * ms), 0.0);
        assert_eq!(k.select_cpu(&machine, &tasks, 5, true, 20 * ms), Some(1));
        // Without a parent it goes where a new task goes: the CPU idle longest.
        tasks[5].spawned_by = None;
        assert_eq!(k.select_cpu(&machine, &tasks, 5, true, 20 * ms), Some(2));
    }

    /// The idle load balancer gives its role up only at a tick that finds
    /// every CPU idle, not when they all idle for an instant (`make`
    /// blocking as the job it started is queued).
    #[test]
    fn the_idle_load_balancer_stops_at_a_tick_that_finds_every_cpu_idle() {
        let machine = crate::scenario::preset("phenom-9750").unwrap().unwrap();
        let ms = 1_000_000;
        let mut k = Kernel::new(&machine, ms);
        let mut tasks: Vec<Sched> = (0..3).map(|seq| sched(0, seq, 4)).collect();
        k.enqueue(&mut tasks, 0, 0, 0, true);
        k.enqueue(&mut tasks, 1, 1, 0, true);
        k.dequeue(&mut tasks, 1, 1, 2 * ms);
        assert_eq!(k.ticks.ilb, Some(1));
        k.dequeue(&mut tasks, 0, 0, 10 * ms);
        k.enqueue(&mut tasks, 2, 2, 10 * ms, true);
        assert_eq!(k.ticks.ilb, Some(1), "an instant with every CPU idle");
        k.dequeue(&mut tasks, 2, 2, 12 * ms);
        k.enqueue(&mut tasks, 0, 0, 12 * ms + ms / 2, false);
        assert_eq!(k.ticks.ilb, Some(1), "no tick of CPU 1 while all idled");
        k.dequeue(&mut tasks, 0, 0, 14 * ms);
        k.enqueue(&mut tasks, 0, 0, 16 * ms, false);
        assert_eq!(k.ticks.ilb, None, "CPU 1's tick at 15 ms found all idle");
    }
}
