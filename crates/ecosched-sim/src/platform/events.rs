//! The event loop. `run_until` repeats: recall the speeds of the tasks
//! whose contention changed, find the next event, move the clock to it,
//! handle everything due then.
//!
//! Events are slice ends and completions (per CPU), arrivals and sleep ends
//! (a timer heap, so an event costs nothing per sleeping task), DVFS
//! transitions and governor samples (per domain), load balancing, and gang
//! slot boundaries. Everything due at one instant is handled in a fixed
//! order — CPUs by index, tasks by creation order — so a seed always gives
//! the same run.
//!
//! A CPU's next event is found when it changes (`touch`: its running task,
//! queue, slice, frequency or contention outcome), not on every event, and
//! a CPU is integrated only when it changes or is read (energy.rs); what
//! is left per event for the CPUs it leaves alone is a scan of one dense
//! array of times.

use super::{Life, MoveCause, Role, SimPlatform, EPS_INSTR};
use crate::kernel::Ns;
use crate::power;
use ecosched_model::CpuId;

impl SimPlatform {
    /// Run until `target` or until every managed task has finished.
    pub(super) fn run_until(&mut self, target: Ns) {
        while !self.workload_done() && self.now < target {
            self.refresh_rates();
            self.refresh_cpu_next();
            self.drop_stale_timers();
            let next = self.next_event(target);
            self.load.sample_span(self.now, next, &self.kernel);
            self.advance_clock(next);
            self.process_events();
        }
        // Whatever runs between two calls (observing, applying a plan)
        // finds every CPU integrated up to now.
        self.integrate_all();
    }

    /// CPU `c`'s running task, run queue, slice or speed is about to
    /// change: integrate it up to now, and have its contention outcome
    /// and next event found again.
    pub(super) fn touch(&mut self, c: usize) {
        self.integrate_cpu(c);
        self.mark_stale(c);
        self.rates.mark_dirty(c);
    }

    /// CPU `c`'s next event must be found again.
    pub(super) fn mark_stale(&mut self, c: usize) {
        if !self.cpu_stale[c] {
            self.cpu_stale[c] = true;
            self.stale.push(c);
        }
    }

    /// Touch every CPU of frequency domain `d`'s voltage domain (a
    /// frequency change moves their voltage too).
    fn touch_voltage_domain(&mut self, d: usize) {
        let vd = self.topology.freq_domains[d].voltage_domain;
        for i in 0..self.vd_cpus[vd].len() {
            self.touch(self.vd_cpus[vd][i]);
        }
    }

    /// Find again the next event of every CPU that changed.
    fn refresh_cpu_next(&mut self) {
        let mut stale = std::mem::take(&mut self.stale);
        for &c in &stale {
            // Those whose speed changed were refreshed with it.
            if self.cpu_stale[c] {
                self.integrate_cpu(c);
                self.refresh_cpu_next_of(c);
            }
        }
        stale.clear();
        self.stale = stale;
    }

    /// Find again the next event of CPU `c`, integrated up to now, once
    /// everything due now has been handled (it is no longer stale).
    pub(super) fn refresh_cpu_next_of(&mut self, c: usize) {
        let (at, check) = self.cpu_next_event(c);
        self.cpu_next.set(c, at);
        self.cpu_check[c] = check;
        self.cpu_stale[c] = false;
    }

    /// Domain `d`'s next transition end or governor sample.
    pub(super) fn refresh_dom_next(&mut self, d: usize) {
        let dom = &self.domains[d];
        let at = dom
            .pending
            .map_or(Ns::MAX, |p| p.1)
            .min(dom.next_eval.unwrap_or(Ns::MAX));
        self.dom_next.set(d, at);
    }

    /// Whether every managed task has finished and none is still to start.
    pub(super) fn workload_done(&self) -> bool {
        self.waiting_after.is_empty() && self.live_managed == 0
    }

    /// `now + span_ns`, rounded up to a whole nanosecond (at least one, so
    /// time always advances) and saturating for spans that never end.
    fn after(&self, span_ns: f64) -> Ns {
        // Spans below 2^52 ns (52 days) are whole-number exact in an f64,
        // so truncating through i64 (one instruction, unlike u64 or a libm
        // `ceil` on a baseline x86-64 target) rounds up exactly; this runs
        // for every CPU whose speed changes.
        if span_ns < 4_503_599_627_370_496.0 {
            let whole = span_ns as i64;
            let up = whole + i64::from((whole as f64) < span_ns);
            return self.now + up.max(1) as Ns;
        }
        let span = span_ns.ceil().max(1.0);
        if span >= (Ns::MAX - self.now) as f64 {
            Ns::MAX
        } else {
            self.now + span as Ns
        }
    }

    /// Whether timer `(at, seq, slot)` still stands for its task.
    fn timer_live(&self, at: Ns, seq: u64, slot: usize) -> bool {
        self.sched.get(slot).is_some_and(|s| s.seq == seq)
            && match self.tasks[slot].life {
                Life::Pending => self.tasks[slot].arrival == at,
                Life::Sleeping { until } => until == at,
                _ => false,
            }
    }

    /// Drop timers at the top of the heap whose task has moved on.
    fn drop_stale_timers(&mut self) {
        while let Some(&std::cmp::Reverse((at, seq, slot))) = self.timers.peek() {
            if self.timer_live(at, seq, slot) {
                break;
            }
            self.timers.pop();
        }
    }

    /// When something next happens on CPU `c` (integrated up to now):
    /// its slice ends with others waiting, or its task completes, changes
    /// phase or ends a burst. Also from when its task may already count
    /// as done with its work, phase or burst (within `EPS_INSTR`
    /// instructions of the end), so that from then on
    /// every event checks it, as a check of every CPU at every event would.
    fn cpu_next_event(&self, c: usize) -> (Ns, Ns) {
        let (mut next, mut check) = (Ns::MAX, Ns::MAX);
        let rq = &self.kernel.rqs[c];
        if !rq.queue.is_empty() {
            next = next.min(rq.slice_end.max(self.now));
        }
        if let Some(t) = rq.current {
            let task = &self.tasks[t];
            let instr = task.remaining.min(task.phase_left).min(task.burst_left);
            if instr <= EPS_INSTR {
                check = self.now;
            }
            let dom = &self.domains[self.cpu_facts[c].domain];
            let waking = self.wake_until[c];
            if self.now < waking {
                // Still leaving an idle state: look again when it is out.
                next = next.min(waking);
                check = check.min(waking);
            } else if self.now >= dom.stall_until && dom.cur_khz > 0 {
                if let Some(o) = self.rates.by_cpu[c] {
                    next = next.min(self.after(instr * o.tpi_ns));
                    check = check.min(self.before((instr - EPS_INSTR) * o.tpi_ns));
                    // A warm-up stage's end changes its speed.
                    if self.warmup.cold[c] {
                        let warm = self.warmup_instr_left(t, &o);
                        if warm.is_finite() {
                            next = next.min(self.after(warm * o.tpi_ns));
                            check = check.min(self.before(warm * o.tpi_ns));
                        }
                    }
                }
            }
        }
        (next, check)
    }

    /// `now + span_ns` rounded down, a nanosecond early for float error and
    /// never before now: a time by which a threshold cannot yet have been
    /// crossed.
    fn before(&self, span_ns: f64) -> Ns {
        if span_ns < 4_503_599_627_370_496.0 {
            return self.now + (span_ns as i64 - 1).max(0) as Ns;
        }
        self.after(span_ns).saturating_sub(2).max(self.now)
    }

    /// The earliest time something happens, capped at `target`.
    fn next_event(&self, target: Ns) -> Ns {
        let mut next = target;
        next = next.min(self.cpu_next.min()).min(self.dom_next.min());
        if let Some(&std::cmp::Reverse((at, _, _))) = self.timers.peek() {
            next = next.min(at);
        }
        if let Some(at) = self.gang.as_ref().map(|g| g.slot_end) {
            next = next.min(at);
        }
        next.min(self.next_balance).max(self.now)
    }

    /// Handle everything due now, in a fixed order: DVFS transitions,
    /// per-CPU completions, phase changes and sleeps, arrivals and wake-ups,
    /// slice ends, governor samples, gang slot boundaries, balancing.
    fn process_events(&mut self) {
        let now = self.now;
        let mut freq_changed = false;
        for d in 0..self.domains.len() {
            if self.dom_next.get(d) > now {
                continue;
            }
            if let Some((khz, at)) = self.domains[d].pending {
                if at <= now {
                    self.touch_voltage_domain(d);
                    self.domains[d].cur_khz = khz;
                    self.domains[d].pending = None;
                    self.refresh_dom_next(d);
                    freq_changed = true;
                }
            }
        }
        if freq_changed {
            self.refresh_volts();
        }
        // A CPU that nothing touched and whose task cannot be done yet
        // has nothing due.
        for c in 0..self.machine.cpus() {
            if self.cpu_check[c] > now && !self.cpu_stale[c] {
                continue;
            }
            let Some(t) = self.kernel.rqs[c].current else {
                continue;
            };
            self.touch(c);
            if self.tasks[t].remaining <= EPS_INSTR {
                if matches!(self.tasks[t].role, Role::Make { .. }) {
                    self.make_burst_done(t, c);
                } else {
                    self.complete(t, c);
                }
            } else if self.tasks[t].phase_left <= EPS_INSTR {
                let task = &mut self.tasks[t];
                if task.phase + 1 < task.profile.phases.len() {
                    task.phase += 1;
                }
                task.phase_left = task.profile.phases[task.phase]
                    .instructions
                    .unwrap_or(f64::INFINITY);
                self.tasks[t].burst_left = self.burst(t);
            } else if self.tasks[t].burst_left <= EPS_INSTR {
                let until = now + self.sleep_ns(t).max(1);
                self.tasks[t].life = Life::Sleeping { until };
                let seq = self.sched[t].seq;
                self.timers.push(std::cmp::Reverse((until, seq, t)));
                self.switch_out(t, c);
            }
        }
        self.wake_due(now);
        // Idle CPUs try to pull work only if a task joined a queue since
        // they last tried (before this pass, or earlier in it).
        let retry_all = std::mem::take(&mut self.idle_retry);
        for c in 0..self.machine.cpus() {
            let rq = &self.kernel.rqs[c];
            let idle = rq.current.is_none();
            if self.cpu_next.get(c) > now
                && !self.cpu_stale[c]
                && !(idle && (retry_all || self.idle_retry))
            {
                continue;
            }
            if idle || (!rq.queue.is_empty() && rq.slice_end <= now) {
                if let Some(prev) = rq.current {
                    self.sched[prev].switches += 1;
                }
                self.schedule(c);
            }
        }
        for d in 0..self.domains.len() {
            if self.dom_next.get(d) > now {
                continue;
            }
            if self.domains[d].next_eval.is_some_and(|at| at <= now) {
                let idle = self
                    .sample_cpus(d)
                    .all(|c| self.kernel.rqs[c].current.is_none());
                if idle && self.domains[d].governor.deferrable() {
                    // Deferrable work does not wake an idle CPU.
                    self.domains[d].deferred = true;
                    self.domains[d].next_eval = None;
                    self.refresh_dom_next(d);
                } else {
                    self.sample_governor(d);
                }
            }
        }
        if self.gang.as_ref().is_some_and(|g| g.slot_end <= now) {
            self.next_gang_slot();
        }
        if self.next_balance <= now {
            for (t, from, to) in self.kernel.balance(&self.machine, &self.sched, now) {
                self.touch(from);
                self.touch(to);
                self.idle_retry = true;
                let was_running = self.kernel.dequeue(&mut self.sched, t, from, now);
                if was_running {
                    self.sched[t].switches += 1;
                }
                self.count_move(t, to, MoveCause::Balance);
                if self.kernel.enqueue(&mut self.sched, t, to, now, false) {
                    self.schedule(to);
                }
                if was_running {
                    self.schedule(from);
                }
            }
            self.next_balance =
                now + super::ns(self.machine.spec.scheduler.balance_interval_ms / 1000.0).max(1);
        }
    }

    /// The CPUs that can run frequency domain `d`'s deferrable governor
    /// sample: 2.6's ondemand and conservative queue one work item per
    /// policy on `policy->cpu`, the policy's first CPU (`dbs_timer_init`:
    /// `queue_delayed_work_on(dbs_info->cpu, …)`), so a sample waits while
    /// that CPU idles, however busy the policy's other CPUs are; 3.11
    /// queues it on every CPU of the policy.
    fn sample_cpus(&self, d: usize) -> impl Iterator<Item = usize> + '_ {
        let cpus = &self.fd_cpus[d];
        let n = if self
            .machine
            .spec
            .governor
            .ondemand_kernel
            .samples_on_policy_cpu()
        {
            1
        } else {
            cpus.len()
        };
        cpus.iter().copied().take(n)
    }

    /// Take frequency domain `d`'s governor sample now.
    fn sample_governor(&mut self, d: usize) {
        // The governor reads the load its CPUs accrued up to now.
        for i in 0..self.fd_cpus[d].len() {
            self.integrate_cpu(self.fd_cpus[d][i]);
        }
        let cap = self.boost_cap(d);
        let spec = &self.machine.spec.governor;
        let dom = &mut self.domains[d];
        dom.deferred = false;
        let cur = dom.pending.map_or(dom.cur_khz, |p| p.0);
        let fd = &self.topology.freq_domains[d];
        let khz = dom.governor.evaluate(spec, fd, self.now, cur, cap);
        dom.next_eval = dom.governor.next_eval(spec);
        self.refresh_dom_next(d);
        if let Some(khz) = khz {
            self.set_freq(d, khz);
        }
    }

    /// Arrivals and sleep ends due by `now`, in creation order.
    fn wake_due(&mut self, now: Ns) {
        let mut due = Vec::new();
        while let Some(&std::cmp::Reverse((at, seq, slot))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            if self.timer_live(at, seq, slot) {
                due.push((seq, slot));
            }
        }
        due.sort_unstable();
        for (_, t) in due {
            match self.tasks[t].life {
                Life::Pending => {
                    if !self.tasks[t].carried_start {
                        self.tasks[t].started = now;
                    }
                    self.wake(t, true);
                }
                Life::Sleeping { .. } => {
                    self.tasks[t].burst_left = self.burst(t);
                    self.wake(t, false);
                }
                _ => {}
            }
        }
    }

    /// Let CPU `c` pick its next task, pulling one from elsewhere if it would idle.
    pub(super) fn schedule(&mut self, c: usize) {
        self.touch(c);
        let rq = &self.kernel.rqs[c];
        // How long it has been idle, if it is idle now.
        let idle_ns = (rq.current.is_none() && rq.idle).then(|| self.now - rq.idle_since);
        if rq.current.is_some() {
            // It goes back in the queue, where an idle CPU may pull it.
            self.idle_retry = true;
        }
        if self
            .kernel
            .pick_next(&mut self.sched, c, self.now)
            .is_none()
        {
            let Some((t, from)) = self
                .kernel
                .idle_pull(&self.machine, &self.sched, c, self.now)
            else {
                return;
            };
            self.touch(from);
            self.kernel.dequeue(&mut self.sched, t, from, self.now);
            self.count_move(t, c, MoveCause::IdlePull);
            self.kernel.enqueue(&mut self.sched, t, c, self.now, false);
            self.kernel.pick_next(&mut self.sched, c, self.now);
        }
        if let Some(idle_ns) = idle_ns {
            // An idle CPU that now runs a task first leaves its idle state,
            // and runs the governor sample its idleness deferred.
            let exit = power::exit_latency_ns(&self.machine.spec.power, idle_ns);
            self.wake_until[c] = self.now + exit;
            let d = self.cpu_facts[c].domain;
            if self.domains[d].deferred && self.sample_cpus(d).any(|s| s == c) {
                self.sample_governor(d);
            }
        }
    }

    /// Task `t` leaves CPU `c` (blocks, stops, freezes or exits).
    pub(super) fn switch_out(&mut self, t: usize, c: usize) {
        self.touch(c);
        if self.kernel.dequeue(&mut self.sched, t, c, self.now) {
            self.sched[t].switches += 1;
            self.schedule(c);
        }
    }

    /// Task `t` becomes runnable (`fresh`: it has just arrived). A task
    /// frozen by the gang schedule becomes runnable but stays off the run
    /// queues until its group's slot.
    pub(super) fn wake(&mut self, t: usize, fresh: bool) {
        self.tasks[t].life = Life::Runnable;
        if self.tasks[t].frozen {
            return;
        }
        let Some(c) = self
            .kernel
            .select_cpu(&self.machine, &self.sched, t, fresh, self.now)
        else {
            return;
        };
        self.touch(c);
        self.idle_retry = true;
        // Woken off a CPU it may no longer use: its cpuset moved it.
        let cause = match self.sched[t].cpu {
            Some(p) if !self.sched[t].allowed[p] => MoveCause::Affinity,
            _ => MoveCause::WakeUp,
        };
        self.count_move(t, c, cause);
        if self.kernel.enqueue(&mut self.sched, t, c, self.now, fresh) {
            match self.kernel.rqs[c].current {
                None => self.schedule(c),
                Some(_) => self.kernel.rqs[c].slice_end = self.now,
            }
        }
    }

    /// Count the move of task `t` to CPU `to`, if it is a migration of a
    /// managed task (the kernel counts every one in `Sched::migrations`).
    fn count_move(&mut self, t: usize, to: usize, cause: MoveCause) {
        if !self.tasks[t].managed || self.sched[t].cpu.is_none_or(|c| c == to) {
            return;
        }
        let m = &mut self.stats.migrations;
        *match cause {
            MoveCause::WakeUp => &mut m.wake_up,
            MoveCause::Balance => &mut m.balance,
            MoveCause::IdlePull => &mut m.idle_pull,
            MoveCause::Affinity => &mut m.affinity,
        } += 1;
    }

    /// Ask frequency domain `d` for `khz` (after its transition latency).
    pub(super) fn set_freq(&mut self, d: usize, khz: u64) {
        let dom = &self.domains[d];
        let target = dom.pending.map_or(dom.cur_khz, |p| p.0);
        if khz == target {
            return;
        }
        self.touch_voltage_domain(d);
        let dom = &mut self.domains[d];
        let latency = u64::from(self.topology.freq_domains[d].transition_latency_us) * 1000;
        if latency == 0 {
            dom.cur_khz = khz;
            dom.pending = None;
            self.refresh_volts();
        } else {
            dom.pending = Some((khz, self.now + latency));
            if self.machine.spec.frequency.stall_on_transition {
                dom.stall_until = self.now + latency;
            }
        }
        self.refresh_dom_next(d);
    }

    /// Re-derive each voltage domain's voltage: the highest any of its
    /// frequency domains' current P-states needs.
    pub(super) fn refresh_volts(&mut self) {
        for (vd, v) in self.volts.iter_mut().enumerate() {
            *v = self.topology.voltage_domains[vd]
                .freq_domains
                .iter()
                .filter_map(|&fd| {
                    let dom = &self.topology.freq_domains[fd.index()];
                    dom.pstate(self.domains[fd.index()].cur_khz)
                        .and_then(|p| p.voltage_mv)
                })
                .max()
                .map_or(1.0, |mv| f64::from(mv) / 1000.0);
        }
    }

    /// Re-derive a managed task's allowed CPUs and move it if it sits outside them.
    pub(super) fn reconfine(&mut self, t: usize) {
        let set = match &self.tasks[t].own_cpus {
            Some(own) => {
                let both = own.intersection(&self.managed_cpus);
                if both.is_empty() {
                    self.managed_cpus.clone()
                } else {
                    both
                }
            }
            None => self.managed_cpus.clone(),
        };
        let allowed: Vec<bool> = (0..self.machine.cpus())
            .map(|c| set.contains(CpuId(c as u32)))
            .collect();
        self.sched[t].allowed = allowed;
        self.idle_retry = true;
        let runnable = self.tasks[t].life == Life::Runnable;
        if let Some(c) = self.sched[t].cpu {
            if runnable && !self.sched[t].allowed[c] {
                self.touch(c);
                let was_running = self.kernel.dequeue(&mut self.sched, t, c, self.now);
                if was_running {
                    self.sched[t].switches += 1;
                    self.schedule(c);
                }
                self.wake(t, false);
            }
        }
    }
}

/// Times with their earliest at hand: a tournament tree over the leaves
/// (padded to a power of two), so that changing one time costs log n and
/// the next event is found without a pass over every CPU and domain.
#[derive(Debug, Clone)]
pub(super) struct MinTree {
    /// Leaves start here.
    size: usize,
    /// Node k holds the minimum of nodes 2k and 2k + 1; the root is node 1.
    t: Vec<Ns>,
}

impl MinTree {
    /// `n` times, all `Ns::MAX` (never).
    pub(super) fn new(n: usize) -> Self {
        let size = n.next_power_of_two();
        MinTree {
            size,
            t: vec![Ns::MAX; 2 * size],
        }
    }

    /// Time `i`.
    pub(super) fn get(&self, i: usize) -> Ns {
        self.t[self.size + i]
    }

    /// Set time `i` to `at`.
    pub(super) fn set(&mut self, i: usize, at: Ns) {
        let mut k = self.size + i;
        if self.t[k] == at {
            return;
        }
        self.t[k] = at;
        while k > 1 {
            k /= 2;
            let m = self.t[2 * k].min(self.t[2 * k + 1]);
            if self.t[k] == m {
                break;
            }
            self.t[k] = m;
        }
    }

    /// The earliest time.
    pub(super) fn min(&self) -> Ns {
        self.t[1]
    }
}
