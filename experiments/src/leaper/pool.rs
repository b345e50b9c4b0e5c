//! A small pool of worker threads for the Leaper experiments' independent pieces of work (the
//! training pass of a workload, the model's training, each policy's measured run, the fjall peer).
//! A job may hand follow-up jobs back (a policy run needs its workload's training pass first);
//! they go to the front of the queue, so a workload's runs start before the next workload's
//! training pass. Every job builds its own store, op stream and clock from the seed, so what a job
//! counts does not depend on which thread runs it or when: only wall times do.

use std::collections::VecDeque;
use parking_lot::{Condvar, Mutex};

/// Worker threads of the Leaper experiments: two (the budgets assume a machine of two cores), or
/// fewer when the machine has fewer.
pub fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
}

/// [`workers`], but one when that many jobs side by side, each needing `job_bytes` of memory,
/// would not fit in the `available` bytes (unknown: [`workers`]). Jobs share nothing, so this
/// changes their wall times only, never what they count.
pub fn workers_within(job_bytes: u64, available: Option<u64>) -> usize {
    let n = workers();
    match available {
        Some(avail) if job_bytes.saturating_mul(n as u64) > avail => 1,
        _ => n,
    }
}

struct Queue<J> {
    jobs: VecDeque<J>,
    /// Jobs being run (each may still hand back follow-ups).
    active: usize,
}

/// Runs `initial` and every follow-up job on `workers` threads (at least one) until none is left.
/// `work` runs one job and pushes its follow-ups onto the vector it is given. A job that panics
/// stops the pool (the others finish the job they hold) and the panic is raised again here.
pub fn run_jobs<J: Send>(workers: usize, initial: Vec<J>, work: &(dyn Fn(J, &mut Vec<J>) + Sync)) {
    let state = Mutex::new(Queue {
        jobs: initial.into_iter().collect(),
        active: 0,
    });
    let wake = Condvar::new();
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            s.spawn(|| loop {
                let job = {
                    let mut q = state.lock();
                    loop {
                        if let Some(j) = q.jobs.pop_front() {
                            q.active += 1;
                            break Some(j);
                        }
                        if q.active == 0 {
                            break None;
                        }
                        wake.wait(&mut q);
                    }
                };
                let Some(job) = job else {
                    wake.notify_all();
                    return;
                };
                // Marks the job done even if it panics, so that the other workers do not wait
                // for follow-ups that will never come.
                struct Done<'a, J> {
                    state: &'a Mutex<Queue<J>>,
                    wake: &'a Condvar,
                    follow: Vec<J>,
                }
                impl<J> Drop for Done<'_, J> {
                    fn drop(&mut self) {
                        let mut q = self.state.lock();
                        q.active -= 1;
                        if std::thread::panicking() {
                            q.jobs.clear();
                        } else {
                            for j in self.follow.drain(..).rev() {
                                q.jobs.push_front(j);
                            }
                        }
                        drop(q);
                        self.wake.notify_all();
                    }
                }
                let mut done = Done {
                    state: &state,
                    wake: &wake,
                    follow: Vec::new(),
                };
                work(job, &mut done.follow);
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_and_follow_up_runs_once() {
        // Job n hands back n - 1 and n - 2 (a tree of Fibonacci size).
        let ran = Mutex::new(Vec::new());
        run_jobs(2, vec![10u32, 3], &|n, follow| {
            ran.lock().push(n);
            if n >= 2 {
                follow.push(n - 1);
                follow.push(n - 2);
            }
        });
        let ran = ran.into_inner();
        let calls = |n: u32| -> usize {
            fn c(n: u32) -> usize {
                if n >= 2 {
                    1 + c(n - 1) + c(n - 2)
                } else {
                    1
                }
            }
            c(n)
        };
        assert_eq!(ran.len(), calls(10) + calls(3));
        assert_eq!(ran.iter().filter(|&&n| n == 10).count(), 1);
        assert_eq!(ran.iter().filter(|&&n| n == 0).count(), 34 + 1);
    }

    #[test]
    fn one_worker_runs_follow_ups_first() {
        let ran = Mutex::new(Vec::new());
        run_jobs(1, vec!["a", "b"], &|j, follow| {
            ran.lock().push(j);
            if j == "a" {
                follow.extend(["a1", "a2"]);
            }
        });
        assert_eq!(ran.into_inner(), ["a", "a1", "a2", "b"]);
    }

    #[test]
    fn jobs_that_do_not_fit_side_by_side_run_one_at_a_time() {
        let n = workers();
        assert_eq!(workers_within(10, None), n, "unknown memory");
        assert_eq!(workers_within(10, Some(10 * n as u64)), n, "exactly fits");
        assert_eq!(workers_within(10, Some(10 * n as u64 - 1)), 1, "one byte short");
        assert_eq!(workers_within(0, Some(0)), n, "jobs needing nothing");
        assert_eq!(workers_within(u64::MAX, Some(u64::MAX - 1)), 1, "no overflow");
    }

    #[test]
    fn no_jobs_returns() {
        run_jobs::<u8>(2, Vec::new(), &|_, _| panic!("no job to run"));
    }
}
