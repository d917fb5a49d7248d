//! The actionlib wire protocol (ROS 1), generic over the action type: a server with
//! SimpleActionServer semantics and a client, interoperable with Python and C++ actionlib.
//!
//! An action `ns` uses five topics: `ns/goal` and `ns/cancel` (client → server),
//! `ns/status`, `ns/feedback` and `ns/result` (server → client). Every goal has a
//! `GoalID` (a unique string and a stamp) and a status from `actionlib_msgs/GoalStatus`.
//!
//! Server semantics (those of `actionlib::SimpleActionServer`):
//! - at most one *active* goal and one *pending* goal; a goal arriving while another is
//!   pending recalls the pending one (RECALLED);
//! - the executor accepts the pending goal with [`ActionServer::accept_new_goal`]; an active
//!   goal is then preempted by the new one (PREEMPTED, "preempted by a new goal");
//! - a cancel request matches by id, "everything" (empty id, zero stamp) or "everything
//!   stamped at or before" (empty id, non-zero stamp): a pending goal is RECALLED at once, the
//!   active goal becomes PREEMPTING and the executor sees
//!   [`ActionServer::is_preempt_requested`];
//! - `status` is published on every change and as a 5 Hz heartbeat on the wall clock (it
//!   tells clients the server is alive, and must keep coming when sim time is paused);
//!   finished goals stay in it for 5 s, as actionlib does.
//!
//! Server and client subscribe through [`crate::direct`], which links again to a publisher
//! whose link ended (a cable cut between the planner's computer and the controller's, say);
//! rosrust's subscriber never does.
//!
//! Client robustness beyond actionlib's own clients:
//! - [`ActionClient::wait_for_server`] waits until the node whose status it hears has an
//!   *established* connection on the feedback and result topics too (a publisher counts
//!   only once its connection header has arrived);
//! - a goal the server lists as terminal whose result never arrives (a publisher adds a
//!   fresh connection to its send list asynchronously, so the first result on a new link
//!   can be lost) still ends, after [`RESULT_GRACE`], with the status's text and no result.
//!
//! Not implemented: rejecting goals older than the current one by stamp (actionlib's
//! SimpleActionServer does), and the client-side LOST state.

use crate::clock::Waker;
use crate::direct::{self, DirectSubscriber, Link};
use crate::lazy::{self, LazySubscriber};
use crate::msgs::actionlib_msgs::{GoalID, GoalStatus, GoalStatusArray};
use crate::msgs::std_msgs::Header;
use crate::runtime::Publisher;
use crate::this_node;
use crate::Lock;
use crate::RosError;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// An action type: its goal, result and feedback, and the three wire wrappers.
pub trait Action: Send + Sync + 'static {
    /// The goal.
    type Goal: rosrust::Message;
    /// The result.
    type Result: rosrust::Message;
    /// The feedback.
    type Feedback: rosrust::Message;
    /// `…ActionGoal` (header, goal_id, goal).
    type ActionGoal: rosrust::Message;
    /// `…ActionResult` (header, status, result).
    type ActionResult: rosrust::Message;
    /// `…ActionFeedback` (header, status, feedback).
    type ActionFeedback: rosrust::Message;

    /// Wraps a goal.
    fn wrap_goal(header: Header, goal_id: GoalID, goal: Self::Goal) -> Self::ActionGoal;
    /// Unwraps a goal.
    fn unwrap_goal(g: Self::ActionGoal) -> (Header, GoalID, Self::Goal);
    /// Wraps a result.
    fn wrap_result(header: Header, status: GoalStatus, result: Self::Result) -> Self::ActionResult;
    /// Unwraps a result.
    fn unwrap_result(r: Self::ActionResult) -> (Header, GoalStatus, Self::Result);
    /// Wraps feedback.
    fn wrap_feedback(
        header: Header,
        status: GoalStatus,
        feedback: Self::Feedback,
    ) -> Self::ActionFeedback;
    /// Unwraps feedback.
    fn unwrap_feedback(f: Self::ActionFeedback) -> (Header, GoalStatus, Self::Feedback);
}

/// Implements [`Action`] for an action's generated messages:
/// `impl_action!(Name, action_module, Goal, Result, Feedback, ActionGoal, ActionResult,
/// ActionFeedback)`. The wrappers embed `gem_msgs`' `Header`, `GoalID` and `GoalStatus`,
/// the very types of [`crate::msgs`], so wrapping and unwrapping only moves fields.
#[macro_export]
macro_rules! impl_action {
    ($name:ident, $($m:ident)::+, $goal:ident, $result:ident, $feedback:ident, $agoal:ident, $aresult:ident, $afeedback:ident) => {
        /// Marker type for the action.
        pub struct $name;

        impl $crate::actionlib::Action for $name {
            type Goal = $($m)::+::$goal;
            type Result = $($m)::+::$result;
            type Feedback = $($m)::+::$feedback;
            type ActionGoal = $($m)::+::$agoal;
            type ActionResult = $($m)::+::$aresult;
            type ActionFeedback = $($m)::+::$afeedback;
            fn wrap_goal(header: $crate::msgs::std_msgs::Header, goal_id: $crate::msgs::actionlib_msgs::GoalID, goal: Self::Goal) -> Self::ActionGoal {
                Self::ActionGoal { header, goal_id, goal }
            }
            fn unwrap_goal(g: Self::ActionGoal) -> ($crate::msgs::std_msgs::Header, $crate::msgs::actionlib_msgs::GoalID, Self::Goal) {
                (g.header, g.goal_id, g.goal)
            }
            fn wrap_result(header: $crate::msgs::std_msgs::Header, status: $crate::msgs::actionlib_msgs::GoalStatus, result: Self::Result) -> Self::ActionResult {
                Self::ActionResult { header, status, result }
            }
            fn unwrap_result(r: Self::ActionResult) -> ($crate::msgs::std_msgs::Header, $crate::msgs::actionlib_msgs::GoalStatus, Self::Result) {
                (r.header, r.status, r.result)
            }
            fn wrap_feedback(header: $crate::msgs::std_msgs::Header, status: $crate::msgs::actionlib_msgs::GoalStatus, feedback: Self::Feedback) -> Self::ActionFeedback {
                Self::ActionFeedback { header, status, feedback }
            }
            fn unwrap_feedback(f: Self::ActionFeedback) -> ($crate::msgs::std_msgs::Header, $crate::msgs::actionlib_msgs::GoalStatus, Self::Feedback) {
                (f.header, f.status, f.feedback)
            }
        }
    };
}

/// `actionlib_msgs/GoalStatus` values, by name.
pub mod status {
    /// Not yet processed.
    pub const PENDING: u8 = 0;
    /// Being processed.
    pub const ACTIVE: u8 = 1;
    /// Cancelled after it started.
    pub const PREEMPTED: u8 = 2;
    /// Achieved.
    pub const SUCCEEDED: u8 = 3;
    /// Failed while being processed.
    pub const ABORTED: u8 = 4;
    /// Refused without processing.
    pub const REJECTED: u8 = 5;
    /// Cancel requested while active.
    pub const PREEMPTING: u8 = 6;
    /// Cancel requested while pending.
    pub const RECALLING: u8 = 7;
    /// Cancelled before it started.
    pub const RECALLED: u8 = 8;
    /// The client lost track of it.
    pub const LOST: u8 = 9;

    /// True for a status a goal never leaves.
    pub fn is_terminal(s: u8) -> bool {
        matches!(
            s,
            PREEMPTED | SUCCEEDED | ABORTED | REJECTED | RECALLED | LOST
        )
    }

    /// The status name.
    pub fn name(s: u8) -> &'static str {
        match s {
            PENDING => "PENDING",
            ACTIVE => "ACTIVE",
            PREEMPTED => "PREEMPTED",
            SUCCEEDED => "SUCCEEDED",
            ABORTED => "ABORTED",
            REJECTED => "REJECTED",
            PREEMPTING => "PREEMPTING",
            RECALLING => "RECALLING",
            RECALLED => "RECALLED",
            LOST => "LOST",
            _ => "UNKNOWN",
        }
    }
}

/// How long finished goals stay in the status list.
const KEEP_FINISHED: Duration = Duration::from_secs(5);
/// Status heartbeat period (wall clock).
const STATUS_PERIOD: Duration = Duration::from_millis(200);

fn header_now() -> Header {
    Header {
        seq: 0,
        stamp: crate::clock::now(),
        frame_id: String::new(),
    }
}

/// Does a cancel request `c` cover goal `g`?
fn cancel_matches(c: &GoalID, g: &GoalID) -> bool {
    let c_zero = c.stamp.sec == 0 && c.stamp.nsec == 0;
    (c.id.is_empty() && c_zero)
        || (!c.id.is_empty() && c.id == g.id)
        || (!c_zero && g.stamp.nanos() <= c.stamp.nanos())
}

/// A goal the server knows about.
struct Tracked<G> {
    status: GoalStatus,
    /// The goal, until the executor takes it.
    goal: Option<G>,
    finished_at: Option<Instant>,
}

struct ServerState<A: Action> {
    goals: Vec<Tracked<A::Goal>>,
    pending: Option<String>,
    active: Option<String>,
}

impl<A: Action> ServerState<A> {
    fn find(&mut self, id: &str) -> Option<&mut Tracked<A::Goal>> {
        self.goals.iter_mut().find(|g| g.status.goal_id.id == id)
    }

    fn status_array(&mut self) -> GoalStatusArray {
        self.goals
            .retain(|g| g.finished_at.is_none_or(|t| t.elapsed() < KEEP_FINISHED));
        GoalStatusArray {
            header: header_now(),
            status_list: self.goals.iter().map(|g| g.status.clone()).collect(),
        }
    }
}

/// The executor's reference to an accepted goal.
#[derive(Clone, Debug, PartialEq)]
pub struct GoalHandle {
    /// The goal's id.
    pub id: GoalID,
}

struct ServerShared<A: Action> {
    state: Mutex<ServerState<A>>,
    status_pub: Publisher<GoalStatusArray>,
    result_pub: Publisher<A::ActionResult>,
    feedback_pub: Publisher<A::ActionFeedback>,
    running: AtomicBool,
    ids: AtomicU64,
    /// Woken on every goal and cancel (see [`ActionServer::with_waker`]).
    waker: std::sync::OnceLock<Waker>,
}

/// An action server with SimpleActionServer semantics, driven by the caller's loop.
pub struct ActionServer<A: Action> {
    shared: Arc<ServerShared<A>>,
    _subs: Vec<DirectSubscriber>,
}

impl<A: Action> ActionServer<A> {
    /// Advertises and subscribes the five topics under `ns` and starts the status heartbeat.
    pub fn new(ns: &str) -> Result<Self, RosError> {
        let shared = Arc::new(ServerShared::<A> {
            state: Mutex::new(ServerState {
                goals: Vec::new(),
                pending: None,
                active: None,
            }),
            status_pub: this_node::publish(&format!("{ns}/status"), 50)?,
            result_pub: this_node::publish(&format!("{ns}/result"), 50)?,
            feedback_pub: this_node::publish(&format!("{ns}/feedback"), 50)?,
            running: AtomicBool::new(true),
            ids: AtomicU64::new(0),
            waker: std::sync::OnceLock::new(),
        });
        let on_goal = shared.clone();
        let goal_sub = direct::subscribe(&format!("{ns}/goal"), move |g: A::ActionGoal, _| {
            on_goal.receive_goal(g);
            on_goal.wake();
        })?;
        let on_cancel = shared.clone();
        let cancel_sub = direct::subscribe(&format!("{ns}/cancel"), move |c: GoalID, _| {
            on_cancel.receive_cancel(&c);
            on_cancel.wake();
        })?;
        let beat = Arc::downgrade(&shared);
        std::thread::spawn(move || {
            while let Some(s) = beat.upgrade() {
                if !s.running.load(Ordering::Relaxed) || !this_node::is_ok() {
                    break;
                }
                s.publish_status(&mut s.lock());
                drop(s);
                std::thread::sleep(STATUS_PERIOD);
            }
        });
        Ok(ActionServer {
            shared,
            _subs: vec![goal_sub, cancel_sub],
        })
    }

    /// Wakes `waker` whenever a goal or a cancel arrives, so the loop driving this server
    /// (waiting on the same waker) accepts or preempts at once rather
    /// than at its next tick.
    pub fn with_waker(self, waker: Waker) -> Self {
        let _ = self.shared.waker.set(waker);
        self
    }

    /// True when a goal is waiting to be accepted.
    pub fn has_pending_goal(&self) -> bool {
        self.shared.lock().pending.is_some()
    }

    /// Accepts the pending goal, preempting the active one if any.
    pub fn accept_new_goal(&self) -> Option<(GoalHandle, A::Goal)> {
        let s = &self.shared;
        let mut st = s.lock();
        let id = st.pending.take()?;
        if let Some(old) = st.active.take() {
            s.finish(
                &mut st,
                &old,
                status::PREEMPTED,
                "preempted by a new goal",
                A::Result::default(),
            );
        }
        let g = st.find(&id)?;
        g.status.status = status::ACTIVE;
        let goal = g.goal.take()?;
        let handle = GoalHandle {
            id: g.status.goal_id.clone(),
        };
        st.active = Some(id);
        s.publish_status(&mut st);
        Some((handle, goal))
    }

    /// True when a cancel request covers the active goal `h`.
    pub fn is_preempt_requested(&self, h: &GoalHandle) -> bool {
        let mut st = self.shared.lock();
        st.find(&h.id.id)
            .is_some_and(|g| g.status.status == status::PREEMPTING)
    }

    /// True while `h` is the active goal.
    pub fn is_active(&self, h: &GoalHandle) -> bool {
        self.shared.lock().active.as_deref() == Some(h.id.id.as_str())
    }

    /// Publishes feedback for `h`.
    pub fn publish_feedback(&self, h: &GoalHandle, feedback: A::Feedback) {
        let mut st = self.shared.lock();
        let Some(g) = st.find(&h.id.id) else { return };
        let msg = A::wrap_feedback(header_now(), g.status.clone(), feedback);
        if let Err(e) = self.shared.feedback_pub.send(msg) {
            tracing::warn!("cannot publish feedback: {e}");
        }
    }

    /// Ends `h` as SUCCEEDED.
    pub fn succeed(&self, h: &GoalHandle, result: A::Result, text: &str) {
        self.end(h, status::SUCCEEDED, text, result);
    }

    /// Ends `h` as ABORTED with a reason.
    pub fn abort(&self, h: &GoalHandle, result: A::Result, text: &str) {
        self.end(h, status::ABORTED, text, result);
    }

    /// Ends `h` as PREEMPTED (after a cancel request).
    pub fn preempt(&self, h: &GoalHandle, result: A::Result, text: &str) {
        self.end(h, status::PREEMPTED, text, result);
    }

    fn end(&self, h: &GoalHandle, to: u8, text: &str, result: A::Result) {
        let s = &self.shared;
        let mut st = s.lock();
        if st.active.as_deref() == Some(h.id.id.as_str()) {
            st.active = None;
        }
        s.finish(&mut st, &h.id.id, to, text, result);
    }
}

impl<A: Action> Drop for ActionServer<A> {
    fn drop(&mut self) {
        self.shared.running.store(false, Ordering::Relaxed);
    }
}

impl<A: Action> ServerShared<A> {
    fn lock(&self) -> MutexGuard<'_, ServerState<A>> {
        self.state.locked()
    }

    fn wake(&self) {
        if let Some(w) = self.waker.get() {
            w.wake();
        }
    }

    fn receive_goal(&self, g: A::ActionGoal) {
        let (_, mut id, goal) = A::unwrap_goal(g);
        if id.id.is_empty() {
            id.id = format!(
                "{}-{}",
                this_node::name(),
                self.ids.fetch_add(1, Ordering::Relaxed)
            );
        }
        if id.stamp.sec == 0 && id.stamp.nsec == 0 {
            id.stamp = crate::clock::now();
        }
        let mut st = self.lock();
        if st.find(&id.id).is_some() {
            tracing::warn!("goal {} received twice; ignoring the repeat", id.id);
            return;
        }
        if let Some(old) = st.pending.take() {
            self.finish(
                &mut st,
                &old,
                status::RECALLED,
                "replaced by a newer goal",
                A::Result::default(),
            );
        }
        let key = id.id.clone();
        let status = GoalStatus {
            goal_id: id,
            status: status::PENDING,
            text: String::new(),
        };
        st.goals.push(Tracked {
            status,
            goal: Some(goal),
            finished_at: None,
        });
        st.pending = Some(key);
        self.publish_status(&mut st);
    }

    fn receive_cancel(&self, c: &GoalID) {
        let mut st = self.lock();
        let mut recalled = Vec::new();
        for g in st
            .goals
            .iter_mut()
            .filter(|g| cancel_matches(c, &g.status.goal_id))
        {
            match g.status.status {
                status::PENDING => recalled.push(g.status.goal_id.id.clone()),
                status::ACTIVE => g.status.status = status::PREEMPTING,
                _ => {}
            }
        }
        for id in recalled {
            if st.pending.as_deref() == Some(id.as_str()) {
                st.pending = None;
            }
            self.finish(
                &mut st,
                &id,
                status::RECALLED,
                "cancelled before it started",
                A::Result::default(),
            );
        }
        self.publish_status(&mut st);
    }

    /// Moves goal `id` to terminal status `to` and publishes its result and the status.
    fn finish(&self, st: &mut ServerState<A>, id: &str, to: u8, text: &str, result: A::Result) {
        let Some(g) = st.find(id) else { return };
        if status::is_terminal(g.status.status) {
            return;
        }
        g.status.status = to;
        g.status.text = text.to_owned();
        g.goal = None;
        g.finished_at = Some(Instant::now());
        let msg = A::wrap_result(header_now(), g.status.clone(), result);
        if let Err(e) = self.result_pub.send(msg) {
            tracing::warn!("cannot publish result: {e}");
        }
        self.publish_status(st);
    }

    fn publish_status(&self, st: &mut ServerState<A>) {
        if let Err(e) = self.status_pub.send(st.status_array()) {
            tracing::warn!("cannot publish status: {e}");
        }
    }
}

/// What a client hears about its goals.
#[derive(Debug)]
pub enum ClientEvent<A: Action> {
    /// Feedback for goal `id`.
    Feedback {
        /// Goal id.
        id: String,
        /// The feedback.
        feedback: A::Feedback,
    },
    /// Goal `id` ended with `status`.
    Done {
        /// Goal id.
        id: String,
        /// Terminal status (see [`status`]).
        status: u8,
        /// The server's text.
        text: String,
        /// The result; `None` when it never arrived and the end was read from the
        /// server's status list instead (see [`RESULT_GRACE`]).
        result: Option<A::Result>,
    },
}

/// How long a goal may be listed as terminal in the server's status without its result
/// arriving before the client ends it from the status alone.
pub const RESULT_GRACE: Duration = Duration::from_secs(1);

/// Which goals have ended for the client, and since when the server has listed the others
/// as terminal without their result reaching us.
#[derive(Default)]
struct Endings {
    /// The goals this client sent that have not ended: an ended goal leaves only a place
    /// among the [`RECENTLY_ENDED`] newest, so a client that sends goals all day keeps
    /// those in flight and a few more.
    open: HashSet<String>,
    /// The goals that ended last, newest at the back: their feedback sent before the end
    /// but read after it (a feedback subscription read on demand) is still theirs.
    ended: VecDeque<String>,
    terminal_since: HashMap<String, Instant>,
}

/// How many ended goals a client still counts as its own (see `Endings::ended`).
const RECENTLY_ENDED: usize = 8;

impl Endings {
    /// A goal was sent.
    fn sent(&mut self, id: &str) {
        self.open.insert(id.to_owned());
    }

    /// Whether goal `id` was sent by this client and has not ended or ended lately.
    fn is_ours(&self, id: &str) -> bool {
        self.open.contains(id) || self.ended.iter().any(|e| e == id)
    }

    /// Goal `id` ends now (its result arrived, or see [`Endings::listed`]): true when it
    /// was open (its first ending).
    fn end(&mut self, id: &str) -> bool {
        self.terminal_since.remove(id);
        if !self.open.remove(id) {
            return false;
        }
        if self.ended.len() == RECENTLY_ENDED {
            self.ended.pop_front();
        }
        self.ended.push_back(id.to_owned());
        true
    }

    /// The server lists goal `id` with `status` at `now`: true when the client should end
    /// it from the status (terminal for [`RESULT_GRACE`] with no result).
    fn listed(&mut self, id: &str, status: u8, now: Instant) -> bool {
        if !status::is_terminal(status) || !self.open.contains(id) {
            return false;
        }
        let since = *self.terminal_since.entry(id.to_owned()).or_insert(now);
        if now.duration_since(since) < RESULT_GRACE {
            return false;
        }
        self.end(id)
    }
}

/// How long a sent goal may go unlisted in the server's status (or a cancelled goal stay
/// PENDING/ACTIVE) before the client sends it again. A publisher counts *any* subscriber:
/// an `rostopic echo` of the goal topic satisfies [`ActionClient::wait_for_server`] while
/// the server's own connection is still being made, and a goal sent then is lost.
/// Resending is safe: the server ignores a goal id it already knows.
const ACK_TIMEOUT: Duration = Duration::from_millis(500);

/// Messages waiting for the server to show it acted on them, keyed by goal id.
struct Outstanding<M: rosrust::Message> {
    items: Mutex<Vec<(String, Instant, M)>>,
    publisher: Publisher<M>,
    what: &'static str,
}

impl<M: rosrust::Message> Outstanding<M> {
    fn new(publisher: Publisher<M>, what: &'static str) -> Self {
        Outstanding {
            items: Mutex::default(),
            publisher,
            what,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(String, Instant, M)>> {
        self.items.locked()
    }

    fn send(&self, id: &str, msg: M) -> Result<(), RosError> {
        self.publisher.send(&msg)?;
        self.lock().push((id.to_owned(), Instant::now(), msg));
        Ok(())
    }

    fn forget(&self, id: &str) {
        self.lock().retain(|(i, _, _)| i != id);
    }

    /// Drops what `done` says took effect; resends the rest once overdue.
    fn review(&self, done: impl Fn(&str) -> bool) {
        let mut items = self.lock();
        items.retain(|(id, _, _)| !done(id));
        for (id, sent, msg) in items.iter_mut() {
            if sent.elapsed() >= ACK_TIMEOUT {
                tracing::warn!(
                    "{} {id} not acted on by the server after {ACK_TIMEOUT:?}; sending it again",
                    self.what
                );
                if let Err(e) = self.publisher.send(&*msg) {
                    tracing::warn!("cannot resend {} {id}: {e}", self.what);
                }
                *sent = Instant::now();
            }
        }
    }
}

struct ClientShared {
    /// Latest status of each of our goals.
    statuses: Mutex<Vec<GoalStatus>>,
    /// The node whose status reached us last.
    server: Mutex<Option<String>>,
    /// Nodes with an established connection on the feedback and on the result topic.
    feedback_links: Mutex<HashSet<String>>,
    result_links: Mutex<HashSet<String>>,
    /// The goals this client sent and has not seen end, and how they end.
    endings: Mutex<Endings>,
    /// Told when a server's status arrives or a link to our subscriptions is made
    /// ([`ActionClient::wait_for_server`] sleeps on it).
    linked: (Mutex<()>, std::sync::Condvar),
}

impl ClientShared {
    /// Wakes [`ActionClient::wait_for_server`] to look again.
    fn tell_linked(&self) {
        let _guard = self.linked.0.locked();
        self.linked.1.notify_all();
    }
}

/// `on_connect` for a client subscription: records the publishing node in `links`.
fn record_link(
    shared: &Arc<ClientShared>,
    links: fn(&ClientShared) -> &Mutex<HashSet<String>>,
) -> impl Fn(&Link) + Send + Sync + 'static {
    let shared = shared.clone();
    move |link| {
        links(&shared).locked().insert(link.caller_id().to_owned());
        shared.tell_linked();
    }
}

/// An action client.
pub struct ActionClient<A: Action> {
    goals: Arc<Outstanding<A::ActionGoal>>,
    cancels: Arc<Outstanding<GoalID>>,
    cancel_pub: Publisher<GoalID>,
    shared: Arc<ClientShared>,
    events: Mutex<mpsc::Receiver<ClientEvent<A>>>,
    status_sub: DirectSubscriber,
    feedback_sub: FeedbackSubscriber,
    result_sub: DirectSubscriber,
    /// The newest feedback of each goal not taken yet (feedback on demand).
    latest_feedback: Arc<LatestFeedback<A>>,
    counter: AtomicU64,
}

/// The newest feedback of each goal (by goal id), in the order the goals last gave one.
type LatestFeedback<A> = Mutex<Vec<(String, <A as Action>::Feedback)>>;

/// How a client hears feedback: each message as an event, or the newest when asked.
enum FeedbackSubscriber {
    Events(DirectSubscriber),
    OnDemand(LazySubscriber),
}

impl FeedbackSubscriber {
    fn link_report(&self) -> String {
        match self {
            FeedbackSubscriber::Events(s) => s.link_report(),
            FeedbackSubscriber::OnDemand(s) => s.link_report(),
        }
    }
}

impl<A: Action> ActionClient<A> {
    /// Connects to the action at `ns`; every feedback message becomes a
    /// [`ClientEvent::Feedback`].
    pub fn new(ns: &str) -> Result<Self, RosError> {
        Self::connect(ns, false)
    }

    /// Connects to the action at `ns`, keeping only the newest feedback of each goal until
    /// [`ActionClient::take_feedback`] asks for it: no [`ClientEvent::Feedback`] events, and
    /// no thread woken for each feedback message. For a client that needs where a goal
    /// stands at moments of its own (a tick, a pause), not at every step of the server.
    pub fn with_feedback_on_demand(ns: &str) -> Result<Self, RosError> {
        Self::connect(ns, true)
    }

    /// With [`ActionClient::with_feedback_on_demand`]: the newest feedback of each of our
    /// goals that arrived since the last call (read now), in the order the goals last
    /// gave one. Empty for a client made with [`ActionClient::new`].
    pub fn take_feedback(&self) -> Vec<(String, A::Feedback)> {
        if let FeedbackSubscriber::OnDemand(s) = &self.feedback_sub {
            s.catch_up();
        }
        std::mem::take(&mut *self.latest_feedback.locked())
    }

    fn connect(ns: &str, feedback_on_demand: bool) -> Result<Self, RosError> {
        let shared = Arc::new(ClientShared {
            statuses: Mutex::default(),
            server: Mutex::default(),
            feedback_links: Mutex::default(),
            result_links: Mutex::default(),
            endings: Mutex::default(),
            linked: Default::default(),
        });
        let (tx, rx) = mpsc::channel();
        let goal_pub = this_node::publish(&format!("{ns}/goal"), 50)?;
        let cancel_pub = this_node::publish(&format!("{ns}/cancel"), 50)?;
        let goals = Arc::new(Outstanding::new(goal_pub, "goal"));
        let cancels = Arc::new(Outstanding::new(cancel_pub.clone(), "cancel of goal"));
        let status_sub = direct::subscribe_linked(&format!("{ns}/status"), |_| {}, {
            let (shared, tx) = (shared.clone(), tx.clone());
            let (goals, cancels) = (goals.clone(), cancels.clone());
            move |m: GoalStatusArray, _, link: &Link| {
                let heard = Some(link.caller_id().to_owned());
                if std::mem::replace(&mut *shared.server.locked(), heard.clone()) != heard {
                    shared.tell_linked();
                }
                let status = |id: &str| {
                    m.status_list
                        .iter()
                        .find(|g| g.goal_id.id == id)
                        .map(|g| g.status)
                };
                goals.review(|id| status(id).is_some());
                cancels.review(|id| !matches!(status(id), Some(status::PENDING | status::ACTIVE)));
                let ours: Vec<GoalStatus> = {
                    let endings = shared.endings.locked();
                    m.status_list
                        .into_iter()
                        .filter(|g| endings.is_ours(&g.goal_id.id))
                        .collect()
                };
                let now = Instant::now();
                for g in &ours {
                    if shared.endings.locked().listed(&g.goal_id.id, g.status, now) {
                        tracing::warn!(
                            "goal {} is {} on the server but its result never arrived; \
                             ending it from the status",
                            g.goal_id.id,
                            status::name(g.status)
                        );
                        let _ = tx.send(ClientEvent::Done {
                            id: g.goal_id.id.clone(),
                            status: g.status,
                            text: g.text.clone(),
                            result: None,
                        });
                    }
                }
                *shared.statuses.locked() = ours;
            }
        })?;
        let latest_feedback: Arc<LatestFeedback<A>> = Arc::default();
        let feedback_topic = format!("{ns}/feedback");
        // Our goals' feedback, as (goal id, feedback); another client's is dropped.
        let ours = {
            let shared = shared.clone();
            move |m: A::ActionFeedback| {
                let (_, st, feedback) = A::unwrap_feedback(m);
                let id = st.goal_id.id;
                shared
                    .endings
                    .locked()
                    .is_ours(&id)
                    .then_some((id, feedback))
            }
        };
        let on_link = record_link(&shared, |s| &s.feedback_links);
        let feedback_sub = if feedback_on_demand {
            let latest = latest_feedback.clone();
            FeedbackSubscriber::OnDemand(lazy::subscribe_lazily_linked(
                &feedback_topic,
                on_link,
                move |m, _, _: &Link| {
                    if let Some((id, feedback)) = ours(m) {
                        let mut latest = latest.locked();
                        latest.retain(|(i, _)| *i != id);
                        latest.push((id, feedback));
                    }
                },
            )?)
        } else {
            let tx = tx.clone();
            FeedbackSubscriber::Events(direct::subscribe_linked(
                &feedback_topic,
                on_link,
                move |m, _, _: &Link| {
                    if let Some((id, feedback)) = ours(m) {
                        let _ = tx.send(ClientEvent::Feedback { id, feedback });
                    }
                },
            )?)
        };
        let result_sub = direct::subscribe_linked(
            &format!("{ns}/result"),
            record_link(&shared, |s| &s.result_links),
            {
                let shared = shared.clone();
                move |m: A::ActionResult, _, _: &Link| {
                    let (_, st, result) = A::unwrap_result(m);
                    let id = st.goal_id.id;
                    if shared.endings.locked().end(&id) {
                        let _ = tx.send(ClientEvent::Done {
                            id,
                            status: st.status,
                            text: st.text,
                            result: Some(result),
                        });
                    }
                }
            },
        )?;
        Ok(ActionClient {
            goals,
            cancels,
            cancel_pub,
            shared,
            events: Mutex::new(rx),
            status_sub,
            feedback_sub,
            result_sub,
            latest_feedback,
            counter: AtomicU64::new(0),
        })
    }

    /// Waits (bounded) until a server subscribes to our goal and cancel topics, its status
    /// heartbeat reaches us, and it has established connections to our feedback and result
    /// subscriptions.
    ///
    /// Each step sleeps until what it waits for tells it: our publishers' new links, then
    /// the status callback and the links to our subscriptions (waking at least every
    /// [`crate::clock::MAX_NAP`] to see a shutdown).
    pub fn wait_for_server(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let left = || deadline.saturating_duration_since(Instant::now());
        if !self.goals.publisher.wait_for_subscribers(1, left())
            || !self.cancel_pub.wait_for_subscribers(1, left())
        {
            return false;
        }
        let (lock, told) = &self.shared.linked;
        let mut guard = lock.locked();
        loop {
            if self.is_server_connected() {
                return true;
            }
            let left = left();
            if left.is_zero() || !this_node::is_ok() {
                return false;
            }
            guard = told
                .wait_timeout(guard, left.min(crate::clock::MAX_NAP))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// True when a server is connected (see [`ActionClient::wait_for_server`]).
    pub fn is_server_connected(&self) -> bool {
        self.missing_links().is_empty()
    }

    /// What [`ActionClient::is_server_connected`] is still waiting for, in words (for a
    /// test's or a log's failure message); empty when connected.
    pub fn missing_links(&self) -> String {
        let server = self.shared.server.locked().clone();
        let mut missing = Vec::new();
        if self.goals.publisher.subscriber_count() == 0 {
            missing.push("nobody subscribes to our goal topic".to_owned());
        }
        if self.cancel_pub.subscriber_count() == 0 {
            missing.push("nobody subscribes to our cancel topic".to_owned());
        }
        match &server {
            None => missing.push(format!(
                "no status heard ({})",
                self.status_sub.link_report()
            )),
            Some(server) => {
                for (what, links, report) in [
                    (
                        "feedback",
                        &self.shared.feedback_links,
                        self.feedback_sub.link_report(),
                    ),
                    (
                        "result",
                        &self.shared.result_links,
                        self.result_sub.link_report(),
                    ),
                ] {
                    let linked = links.locked();
                    if !linked.contains(server) {
                        missing.push(format!(
                            "{server} (status heard) is not linked to our {what} \
                             subscription (linked: {linked:?}; {report})"
                        ));
                    }
                }
            }
        }
        missing.join("; ")
    }

    /// Sends a goal; returns its id.
    pub fn send_goal(&self, goal: A::Goal) -> Result<String, RosError> {
        let now = crate::clock::now();
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}-{n}-{}.{:09}", this_node::name(), now.sec, now.nsec);
        self.shared.endings.locked().sent(&id);
        let goal_id = GoalID {
            stamp: now,
            id: id.clone(),
        };
        self.goals
            .send(&id, A::wrap_goal(header_now(), goal_id, goal))?;
        Ok(id)
    }

    /// Requests cancellation of goal `id`.
    pub fn cancel(&self, id: &str) -> Result<(), RosError> {
        // A goal never acknowledged must not be resent after its cancel.
        self.goals.forget(id);
        let msg = GoalID {
            stamp: rosrust::Time::default(),
            id: id.to_owned(),
        };
        self.cancels.send(id, msg)
    }

    /// Requests cancellation of every goal on the server.
    pub fn cancel_all(&self) -> Result<(), RosError> {
        Ok(self.cancel_pub.send(GoalID::default())?)
    }

    /// The latest status the server reported for goal `id`.
    pub fn status_of(&self, id: &str) -> Option<u8> {
        self.shared
            .statuses
            .locked()
            .iter()
            .find(|g| g.goal_id.id == id)
            .map(|g| g.status)
    }

    /// The next event, waiting at most `timeout`.
    pub fn next_event(&self, timeout: Duration) -> Option<ClientEvent<A>> {
        self.events.locked().recv_timeout(timeout).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(id: &str, sec: u32) -> GoalID {
        GoalID {
            stamp: rosrust::Time { sec, nsec: 0 },
            id: id.into(),
        }
    }

    #[test]
    fn cancel_all_matches_everything() {
        assert!(cancel_matches(&GoalID::default(), &id("a", 5)));
    }

    #[test]
    fn cancel_by_id_matches_only_that_goal() {
        assert!(cancel_matches(&id("a", 0), &id("a", 5)));
        assert!(!cancel_matches(&id("a", 0), &id("b", 5)));
    }

    #[test]
    fn cancel_by_stamp_matches_goals_at_or_before_it() {
        assert!(cancel_matches(&id("", 5), &id("a", 5)));
        assert!(cancel_matches(&id("", 5), &id("a", 4)));
        assert!(!cancel_matches(&id("", 5), &id("a", 6)));
    }

    #[test]
    fn an_ended_goal_leaves_nothing_behind() {
        let mut e = Endings::default();
        let t = Instant::now();
        for n in 0..1000 {
            let (a, b) = (format!("a{n}"), format!("b{n}"));
            e.sent(&a);
            e.sent(&b);
            assert!(!e.listed(&a, status::ABORTED, t));
            assert!(e.end(&a));
            assert!(!e.listed(&b, status::PREEMPTED, t));
            assert!(e.listed(&b, status::PREEMPTED, t + RESULT_GRACE));
        }
        assert!(e.open.is_empty() && e.terminal_since.is_empty());
        assert_eq!(e.ended.len(), RECENTLY_ENDED, "the newest ended goals only");
        assert!(e.is_ours("b999") && !e.is_ours("a0"));
        assert!(!e.end("never sent"));
    }

    #[test]
    fn a_result_ends_a_goal_once() {
        let mut e = Endings::default();
        e.sent("a");
        assert!(e.end("a"));
        assert!(!e.end("a"));
        let t = Instant::now();
        assert!(!e.listed("a", status::SUCCEEDED, t + RESULT_GRACE * 2));
    }

    #[test]
    fn a_goal_listed_terminal_without_its_result_ends_after_the_grace() {
        let mut e = Endings::default();
        e.sent("a");
        let t = Instant::now();
        assert!(!e.listed("a", status::ACTIVE, t));
        assert!(!e.listed("a", status::ABORTED, t));
        assert!(!e.listed("a", status::ABORTED, t + RESULT_GRACE / 2));
        assert!(e.listed("a", status::ABORTED, t + RESULT_GRACE));
        // Once only, and a late result is not a second ending.
        assert!(!e.listed("a", status::ABORTED, t + RESULT_GRACE * 2));
        assert!(!e.end("a"));
    }

    #[test]
    fn a_result_within_the_grace_wins_over_the_status() {
        let mut e = Endings::default();
        e.sent("a");
        let t = Instant::now();
        assert!(!e.listed("a", status::PREEMPTED, t));
        assert!(e.end("a"));
        assert!(!e.listed("a", status::PREEMPTED, t + RESULT_GRACE));
    }

    #[test]
    fn terminal_statuses() {
        for s in [
            status::PREEMPTED,
            status::SUCCEEDED,
            status::ABORTED,
            status::REJECTED,
            status::RECALLED,
            status::LOST,
        ] {
            assert!(status::is_terminal(s), "{}", status::name(s));
        }
        for s in [
            status::PENDING,
            status::ACTIVE,
            status::PREEMPTING,
            status::RECALLING,
        ] {
            assert!(!status::is_terminal(s), "{}", status::name(s));
        }
    }
}
