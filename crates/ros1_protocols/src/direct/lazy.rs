//! Links read when their owner asks, not when a message arrives.
//!
//! A reader thread blocked on its socket wakes for every message: at 20 Hz on each of nine
//! topics that is 180 wake-ups a second for a display that draws ten frames. A lazy link's
//! socket is non-blocking; its owner reads what queued when it needs the values
//! ([`LazyLinks::drain`]: [`LazySubscriber::catch_up`] for a display's tick, `/clock` when
//! its time is asked for), and the link's own thread sleeps until the publisher hangs up,
//! reading what queued once every [`DRAIN_EVERY`] so the publisher never sees a lagging
//! subscriber ([`keep_link`]).

use super::{Link, Stopping};
use crate::Lock;
use crate::RosError;
use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a link's own thread reads what queued when its owner did not ask: the socket
/// never holds more than a second of messages.
pub const DRAIN_EVERY: Duration = Duration::from_secs(1);

/// The lazy links of one subscription.
#[derive(Default)]
pub struct LazyLinks {
    links: Vec<LazyLink>,
}

/// A linked publisher: its non-blocking stream and the bytes of a frame not yet whole.
struct LazyLink {
    id: u64,
    link: Link,
    stream: TcpStream,
    partial: Vec<u8>,
    /// Why the link can no longer be read (its thread ends it).
    dead: Option<std::io::Error>,
}

impl LazyLinks {
    /// Reads every frame queued on the links (without blocking) and hands each body, with
    /// its link, to `frame`, in order per link.
    pub fn drain(&mut self, mut frame: impl FnMut(&[u8], &Link)) {
        for l in self.links.iter_mut().filter(|l| l.dead.is_none()) {
            if let Err(e) = l.read_queued(&mut frame) {
                l.dead = Some(e);
            }
        }
    }

    /// The sockets to watch for the next message.
    pub fn fds(&self) -> Vec<RawFd> {
        self.links
            .iter()
            .filter(|l| l.dead.is_none())
            .map(|l| l.stream.as_raw_fd())
            .collect()
    }

    /// How many links can be read.
    pub fn live(&self) -> usize {
        self.links.iter().filter(|l| l.dead.is_none()).count()
    }

    fn take_dead(&mut self, id: u64) -> Option<std::io::Error> {
        self.links
            .iter_mut()
            .find(|l| l.id == id)
            .and_then(|l| l.dead.take())
    }
}

impl LazyLink {
    fn read_queued(&mut self, frame: &mut impl FnMut(&[u8], &Link)) -> std::io::Result<()> {
        let mut buf = [0u8; 8192];
        let mut ended = None;
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    ended = Some(ErrorKind::UnexpectedEof.into());
                    break;
                }
                Ok(n) => self.partial.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    ended = Some(e);
                    break;
                }
            }
        }
        // The frames that came before an end are still handed over.
        let mut used = 0;
        while let Some(len) = self.partial.get(used..used + 4) {
            let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
            if len > crate::wire::MAX_MESSAGE {
                return Err(std::io::Error::new(
                    ErrorKind::InvalidData,
                    format!("a frame of {len} bytes"),
                ));
            }
            let Some(body) = self.partial.get(used + 4..used + 4 + len) else {
                break;
            };
            frame(body, &self.link);
            used += 4 + len;
        }
        self.partial.drain(..used);
        ended.map_or(Ok(()), Err)
    }
}

/// A lazy link's thread (the `read` of [`super::subscribe_reading`]): puts the stream,
/// non-blocking, into `links` (under `lock`, reached through `links_of`), then sleeps
/// until the publisher hangs up, calling `drain` (under the lock) at once and every
/// [`DRAIN_EVERY`]. Returns why the link ended, the stream taken out again.
pub fn keep_link<R>(
    lock: &Mutex<R>,
    links_of: impl Fn(&mut R) -> &mut LazyLinks,
    drain: impl Fn(&mut R),
    link: &Link,
    stream: TcpStream,
    stop: Stopping<'_>,
) -> std::io::Error {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let watch = match stream
        .set_nonblocking(true)
        .and_then(|()| stream.try_clone())
    {
        Ok(w) => w,
        Err(e) => return e,
    };
    {
        let mut r = lock.locked();
        links_of(&mut r).links.push(LazyLink {
            id,
            link: link.clone(),
            stream,
            partial: Vec::new(),
            dead: None,
        });
        drain(&mut r);
    }
    let why = loop {
        let mut fd = libc::pollfd {
            fd: watch.as_raw_fd(),
            // Only a hang-up or an error (always reported) wakes this thread, not data.
            events: libc::POLLRDHUP,
            revents: 0,
        };
        let ms = DRAIN_EVERY.as_millis() as libc::c_int;
        // SAFETY: one valid pollfd for the call.
        unsafe { libc::poll(&mut fd, 1, ms) };
        let mut r = lock.locked();
        drain(&mut r);
        if let Some(e) = links_of(&mut r).take_dead(id) {
            break e;
        }
        if fd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            break std::io::Error::new(ErrorKind::ConnectionAborted, "the publisher hung up");
        }
        if stop.requested() {
            break std::io::Error::other("unsubscribed");
        }
    };
    links_of(&mut lock.locked()).links.retain(|l| l.id != id);
    why
}

/// A subscription read when its owner asks ([`LazySubscriber::catch_up`]), and at least
/// every [`DRAIN_EVERY`]: for a display or a summary that looks at the latest values at
/// its own pace. Messages reach the callback in order, on the thread that reads them.
pub struct LazySubscriber {
    catch_up: Box<dyn Fn() + Send + Sync>,
    subscriber: super::DirectSubscriber,
}

/// What a lazy subscriber does with each message.
type OnMessage<T> = Box<dyn FnMut(T, &Link) + Send>;

struct LazyState<T> {
    links: LazyLinks,
    on_message: OnMessage<T>,
}

impl<T: rosrust::Message> LazyState<T> {
    fn drain(&mut self) {
        let on_message = &mut self.on_message;
        self.links
            .drain(|body, link| match T::decode(std::io::Cursor::new(body)) {
                Ok(m) => on_message(m, link),
                Err(e) => tracing::warn!("cannot decode a message from {}: {e}", link.uri),
            });
    }
}

impl LazySubscriber {
    /// Reads what queued on every link now, handing each message to the callback.
    pub fn catch_up(&self) {
        (self.catch_up)();
    }

    /// The subscription underneath (links and their report).
    pub fn subscriber(&self) -> &super::DirectSubscriber {
        &self.subscriber
    }
}

/// Subscribes `topic` on this process's node, lazily (see [`LazySubscriber`]).
pub fn subscribe_lazily<T: rosrust::Message>(
    topic: &str,
    on_message: impl FnMut(T, &Link) + Send + 'static,
) -> Result<LazySubscriber, RosError> {
    let state = Arc::new(Mutex::new(LazyState::<T> {
        links: LazyLinks::default(),
        on_message: Box::new(on_message),
    }));
    let node = crate::this_node::get()?;
    let reader = state.clone();
    let subscriber = super::subscribe_reading::<T>(
        &node,
        topic,
        |_| {},
        move |link, stream, stop| {
            keep_link(
                &reader,
                |s| &mut s.links,
                LazyState::drain,
                link,
                stream,
                stop,
            )
        },
    )?;
    Ok(LazySubscriber {
        catch_up: Box::new(move || state.locked().drain()),
        subscriber,
    })
}
