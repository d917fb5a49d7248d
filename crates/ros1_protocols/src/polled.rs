//! Several subscriptions read by one thread, each message as it arrives.
//!
//! A [`crate::direct`] subscription reads each link on a thread of its own. A node with six
//! inputs at 20 Hz then wakes six threads 20 times a second, though five of them come from
//! one publisher in one burst: each wake-up of a sleeping thread costs tens of
//! microseconds on a virtual machine, more than the message's handling. A [`PolledGroup`]
//! reads the links of all its subscriptions on one thread, which waits for any of their
//! sockets (`poll`) and then reads every link with something queued: the messages of a
//! burst that are in by the time it runs cost one wake-up. The thread is the caller's
//! ([`PolledGroup::run`]), and between messages it does the node's timed work too (a
//! heartbeat, a hold-off deadline): a heartbeat due when a burst comes is sent in the
//! same wake-up.
//!
//! What stays as [`crate::direct`] has it: each message reaches its callback as soon as the
//! thread runs, in order per link, and a link that ends is made again. The thread takes
//! what is queued on a link in one read ([`crate::lazy::LazyLinks`]), so the
//! [`Arrival`] a message comes with is when the read's last bytes arrived: a group is for
//! handlers that judge a message when they get it, not by its arrival. Callbacks run one at
//! a time on the group's thread, so one must not wait for another subscription's message,
//! and a slow one delays the others: a group is for handlers that take microseconds (a
//! state manager's inputs). A link's first messages, queued while it was being made, are
//! read by the link's own thread.
//!
//! Each link keeps a thread of its own for its connection, asleep until the publisher
//! hangs up ([`crate::lazy`]'s link keeper, told never to read: the group does).

use crate::clock::Sleep;
use crate::direct::{Arrival, DirectSubscriber, Link};
use crate::lazy::{keep_link, Keep, LazyState};
use crate::net::Bell;
use crate::{Lock, RosError};
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, Weak};

/// A subscription of a group, as its thread sees it.
trait Member: Send + Sync {
    /// The sockets of its live links.
    fn fds(&self, into: &mut Vec<RawFd>);
    /// Reads what is queued on its links, handing each message to its callback.
    fn drain(&self);
}

impl<T: rosrust::Message> Member for Mutex<LazyState<T>> {
    fn fds(&self, into: &mut Vec<RawFd>) {
        into.extend(self.locked().links.fds());
    }

    fn drain(&self) {
        self.locked().drain();
    }
}

struct Shared {
    members: Mutex<Vec<Weak<dyn Member>>>,
    /// Rung when a link comes or goes: the thread looks again at what to watch.
    bell: Bell,
}

/// Subscriptions whose links one thread reads, [`PolledGroup::run`]'s (see the module's
/// documentation). Drop its subscriptions before it: a subscription that outlives its
/// group is no longer read.
pub struct PolledGroup {
    shared: Arc<Shared>,
}

/// A subscription of a [`PolledGroup`]; dropping it closes its links and unregisters.
pub struct PolledSubscriber {
    /// Dropped first: its links end and leave the group's watch.
    subscriber: DirectSubscriber,
    _member: Arc<dyn Member>,
}

impl PolledSubscriber {
    /// Publishers with an established link.
    pub fn publisher_count(&self) -> usize {
        self.subscriber.publisher_count()
    }
}

impl PolledGroup {
    /// An empty group (its subscriptions are read once [`PolledGroup::run`] runs).
    pub fn new() -> Result<PolledGroup, RosError> {
        let bell = Bell::new();
        if bell.fd() < 0 {
            return Err(RosError::new(format!(
                "cannot make an eventfd: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(PolledGroup {
            shared: Arc::new(Shared {
                members: Mutex::default(),
                bell,
            }),
        })
    }

    /// Reads the group's subscriptions on this thread until `turn` returns `None`. `turn`
    /// runs first and after every wake-up (messages read, or its time came): it does
    /// what is due and says what to wait for next, at most [`Sleep::within`] or until one
    /// of [`Sleep::watch`] is readable (a `/clock` link, see
    /// [`crate::clock::sleep_for`]), besides the group's own links.
    pub fn run(&self, mut turn: impl FnMut() -> Option<Sleep>) {
        let (mut fds, mut owner, mut ready) = (Vec::new(), Vec::new(), Vec::new());
        let mut pollfds: Vec<libc::pollfd> = Vec::new();
        while let Some(sleep) = turn() {
            // The members and their sockets are looked at afresh each round: links come
            // and go.
            let members: Vec<Arc<dyn Member>> = {
                let mut list = self.shared.members.locked();
                list.retain(|m| m.strong_count() > 0);
                list.iter().filter_map(Weak::upgrade).collect()
            };
            let watch = |fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            pollfds.clear();
            pollfds.push(watch(self.shared.bell.fd()));
            pollfds.extend(sleep.watch.iter().map(|&fd| watch(fd)));
            let first_member = pollfds.len();
            owner.clear();
            for (i, m) in members.iter().enumerate() {
                fds.clear();
                m.fds(&mut fds);
                owner.extend(std::iter::repeat_n(i, fds.len()));
                pollfds.extend(fds.iter().map(|&fd| watch(fd)));
            }
            // Whole milliseconds, rounded up: rounded down, a wake-up would come just
            // before the time asked for and find nothing to do.
            let ms = sleep
                .within
                .as_nanos()
                .div_ceil(1_000_000)
                .min(i32::MAX as u128) as libc::c_int;
            // SAFETY: `pollfds` is a valid array of its length for the call.
            let n = unsafe { libc::poll(pollfds.as_mut_ptr(), pollfds.len() as libc::nfds_t, ms) };
            if n <= 0 {
                // The time asked for passed (or a signal came): the turn looks.
                continue;
            }
            if pollfds[0].revents != 0 {
                Bell::clear(self.shared.bell.fd());
            }
            ready.clear();
            ready.resize(members.len(), false);
            for (p, &i) in pollfds[first_member..].iter().zip(&owner) {
                ready[i] |= p.revents != 0;
            }
            for (m, _) in members.iter().zip(&ready).filter(|(_, r)| **r) {
                m.drain();
            }
        }
    }

    /// Subscribes `topic` on this process's node, read by the group's thread: `on_message`
    /// gets each message with its arrival and link.
    pub fn subscribe<T: rosrust::Message>(
        &self,
        topic: &str,
        on_message: impl FnMut(T, Arrival, &Link) + Send + 'static,
    ) -> Result<PolledSubscriber, RosError> {
        let node = crate::this_node::get()?;
        self.subscribe_on(&node, topic, on_message)
    }

    /// [`PolledGroup::subscribe`] on a runtime node.
    pub fn subscribe_on<T: rosrust::Message>(
        &self,
        node: &crate::runtime::Node,
        topic: &str,
        on_message: impl FnMut(T, Arrival, &Link) + Send + 'static,
    ) -> Result<PolledSubscriber, RosError> {
        let state = Arc::new(Mutex::new(LazyState::<T>::new(on_message)));
        let member: Arc<dyn Member> = state.clone();
        self.shared.members.locked().push(Arc::downgrade(&member));
        let group = Arc::downgrade(&self.shared);
        let subscriber = crate::direct::subscribe_reading::<T>(
            node,
            topic,
            |_| {},
            move |link, stream, stop| {
                let ring = || {
                    if let Some(g) = group.upgrade() {
                        Bell::ring(g.bell.fd());
                    }
                };
                keep_link(
                    &state,
                    |s| &mut s.links,
                    LazyState::drain,
                    link,
                    stream,
                    stop,
                    Keep {
                        drain_every: None,
                        changed: &ring,
                    },
                )
            },
        )?;
        Ok(PolledSubscriber {
            subscriber,
            _member: member,
        })
    }
}
