//! The holder's side of a running task: one loop per task, on the replica running it, that
//! alone talks to the store for it.
//!
//! It renews the lease every third of its duration, and each renewal reads what others wrote
//! for the task: a cancel request becomes the execution's cancellation; answers complete the
//! tool's questions. Between renewals it sleeps until the store says something may have been
//! written ([`TaskStore::changed`](crate::TaskStore::changed)), the tool reports progress, asks
//! questions, or ends. Funnelling every write through one loop keeps them in order and bounded:
//! progress is written at most every [`REPORT_EVERY`], however often the tool reports.
//!
//! When the renewal fails because the lease was lost (the store settled the task `failed`:
//! this replica was too slow), or when the store has not answered for a whole lease, the task
//! is another's business now: the tool is cancelled, and the loop stops writing.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use serde_json::Value;
use tokio::{
    sync::{Notify, mpsc, oneshot},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use crate::{
    ask::{Answers, Asks},
    error::{AgentError, codes},
    excerpt::excerpt,
    idempotency::StoreError,
    sync::lock,
    task::{DynTaskStore, TaskEnding, TaskLease, TaskProgress, TaskReport},
};

/// The least time between two progress writes of one task.
const REPORT_EVERY: Duration = Duration::from_millis(250);
/// The longest status message kept: the tool's words, cut short.
const MAX_STATUS_MESSAGE_LEN: usize = 1024;

/// The running execution's handle on its task's loop.
pub(crate) struct Driver {
    commands: mpsc::UnboundedSender<Command>,
    report: Arc<ReportSlot>,
}

/// The latest progress, waiting to be written.
#[derive(Default)]
struct ReportSlot {
    latest: std::sync::Mutex<Option<TaskReport>>,
    wake: Notify,
}

enum Command {
    Ask {
        asks: Asks,
        reply: oneshot::Sender<Result<Answers, AgentError>>,
    },
    Finish {
        ending: TaskEnding,
        done: oneshot::Sender<()>,
    },
}

/// Questions the tool waits on: under their keys in the task, and under which the tool asked
/// each.
struct Round {
    questions: Asks,
    asked_as: BTreeMap<String, String>,
    reply: oneshot::Sender<Result<Answers, AgentError>>,
}

impl Round {
    /// The tool's answers, once every question of the round has one in `answers`.
    fn answers(&self, answers: &BTreeMap<String, Value>) -> Option<Answers> {
        self.asked_as
            .iter()
            .map(|(key, asked_as)| Some((asked_as.clone(), answers.get(key)?.clone())))
            .collect::<Option<BTreeMap<_, _>>>()
            .map(Answers::new)
    }
}

impl Driver {
    /// Starts the loop of the task `lease` holds, renewing it to `duration` and cancelling
    /// `execution` when the owner asks or the lease is lost.
    pub(crate) fn start(
        store: Arc<dyn DynTaskStore>,
        lease: TaskLease,
        duration: Duration,
        execution: CancellationToken,
    ) -> Self {
        let (commands, receiver) = mpsc::unbounded_channel();
        let report = Arc::new(ReportSlot::default());
        let task = Loop {
            store,
            lease,
            duration,
            execution,
            commands: receiver,
            report: Arc::clone(&report),
            rounds: Vec::new(),
            asked: 0,
            cancelled: false,
        };
        tokio::spawn(task.run());
        Self { commands, report }
    }

    /// Puts `asks` to the task's owner and waits for every answer, delivered to any replica.
    pub(crate) async fn ask(&self, asks: Asks) -> Result<Answers, AgentError> {
        let (reply, answers) = oneshot::channel();
        if self.commands.send(Command::Ask { asks, reply }).is_err() {
            return Err(stopped());
        }
        answers.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// The tool's progress; written with the next renewal.
    pub(crate) fn report(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let message = message.map(|message| excerpt(message, MAX_STATUS_MESSAGE_LEN).into_owned());
        let report = TaskReport::new(Some(TaskProgress { done, total }), message);
        *lock(&self.report.latest) = Some(report);
        self.report.wake.notify_one();
    }

    /// Records how the task ended, once its writes before are done.
    pub(crate) async fn finish(&self, ending: TaskEnding) {
        let (done, written) = oneshot::channel();
        if self.commands.send(Command::Finish { ending, done }).is_ok() {
            let _ = written.await;
        }
    }
}

/// The loop stopped: the lease was lost, or the store unreachable for a whole lease.
fn stopped() -> AgentError {
    AgentError::unavailable(
        codes::ASK_FAILED,
        "this task can no longer be reached by its owner: the server lost its hold on it",
    )
}

struct Loop {
    store: Arc<dyn DynTaskStore>,
    lease: TaskLease,
    duration: Duration,
    execution: CancellationToken,
    commands: mpsc::UnboundedReceiver<Command>,
    report: Arc<ReportSlot>,
    /// The rounds of questions not yet answered, oldest first.
    rounds: Vec<Round>,
    /// How many questions the tool asked so far: it makes each key unique in the task.
    asked: u64,
    cancelled: bool,
}

impl Loop {
    async fn run(mut self) {
        let (store, lease) = (Arc::clone(&self.store), self.lease.clone());
        let mut renewed = Instant::now();
        let mut reported = Instant::now() - REPORT_EVERY;
        loop {
            // Armed before the renewal reads: what is written after it wakes the wait below.
            let changed = store.changed_boxed(&lease);
            let report = lock(&self.report.latest).take();
            if report.is_some() {
                reported = Instant::now();
            }
            match self
                .store
                .renew_boxed(&self.lease, self.duration, report)
                .await
            {
                Ok(signals) => {
                    renewed = Instant::now();
                    if signals.cancel_requested && !self.cancelled {
                        self.cancelled = true;
                        self.execution.cancel();
                    }
                    if self.complete(&signals.answers) {
                        self.write_questions().await;
                    }
                }
                Err(StoreError::LeaseLost) => {
                    tracing::warn!(
                        task_id = %self.lease.key().id(),
                        "lost the lease on a running task; the task is settled as failed and the tool is stopped"
                    );
                    self.execution.cancel();
                    return;
                }
                Err(error) => {
                    tracing::warn!(%error, task_id = %self.lease.key().id(), "cannot renew a task's lease");
                    if renewed.elapsed() >= self.duration {
                        // Others see the task failed by now; what the tool does next, nobody
                        // will be told.
                        self.execution.cancel();
                        return;
                    }
                }
            }
            let renew_at = renewed + self.duration / 3;
            tokio::select! {
                biased;
                command = self.commands.recv() => match command {
                    // The execution is gone (the process is stopping): the lease runs out and
                    // the task is settled as lost.
                    None => return,
                    Some(Command::Finish { ending, done }) => {
                        if let Err(error) = self.store.finish_boxed(&self.lease, ending).await {
                            tracing::warn!(%error, task_id = %self.lease.key().id(), "cannot record how a task ended");
                        }
                        let _ = done.send(());
                        return;
                    }
                    Some(Command::Ask { asks, reply }) => {
                        self.open(asks, reply).await;
                    }
                },
                () = changed => {}
                () = self.report.wake.notified() => {
                    // Progress is written at most every REPORT_EVERY.
                    tokio::time::sleep_until(reported + REPORT_EVERY).await;
                }
                () = tokio::time::sleep_until(renew_at) => {}
            }
        }
    }

    /// Records a new round of questions beside the open ones.
    async fn open(&mut self, asks: Asks, reply: oneshot::Sender<Result<Answers, AgentError>>) {
        let mut round = Round {
            questions: Asks::new(),
            asked_as: BTreeMap::new(),
            reply,
        };
        for (key, ask) in asks.iter() {
            self.asked += 1;
            let unique = format!("{key}.{}", self.asked);
            round.questions = round.questions.with(unique.clone(), ask.clone());
            round.asked_as.insert(unique, key.to_owned());
        }
        self.rounds.push(round);
        if let Err(error) = self
            .store
            .ask_boxed(&self.lease, self.open_questions())
            .await
            && let Some(round) = self.rounds.pop()
        {
            let _ = round.reply.send(Err(match error {
                StoreError::Full(reason) => AgentError::capacity(reason),
                error => AgentError::unavailable(
                    codes::ASK_FAILED,
                    format!("the question could not be recorded: {error}"),
                ),
            }));
        }
    }

    /// Hands each round answered in full its answers; whether any was.
    fn complete(&mut self, answers: &BTreeMap<String, Value>) -> bool {
        let before = self.rounds.len();
        let mut open = Vec::with_capacity(before);
        for round in self.rounds.drain(..) {
            match round.answers(answers) {
                Some(answered) => {
                    // A tool that stopped waiting (cancelled) drops the receiver: nothing to do.
                    let _ = round.reply.send(Ok(answered));
                }
                None => open.push(round),
            }
        }
        self.rounds = open;
        self.rounds.len() != before
    }

    /// The questions of every round still waiting, in the order asked.
    fn open_questions(&self) -> Asks {
        self.rounds
            .iter()
            .flat_map(|round| round.questions.iter())
            .fold(Asks::new(), |asks, (key, ask)| asks.with(key, ask.clone()))
    }

    /// Tells the store which questions still wait, now that some were answered.
    async fn write_questions(&self) {
        if let Err(error) = self
            .store
            .ask_boxed(&self.lease, self.open_questions())
            .await
        {
            tracing::warn!(%error, task_id = %self.lease.key().id(), "cannot close a task's answered questions");
        }
    }
}
