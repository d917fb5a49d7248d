//! Links read when their owner asks, not when a message arrives.
//!
//! A reader thread blocked on its socket wakes for every message: at 20 Hz on each of nine
//! topics that is 180 wake-ups a second for a display that draws ten frames. A lazy link's
//! socket is non-blocking; its owner reads what queued when it needs the values
//! ([`LazyLinks::drain`]: [`LazySubscriber::catch_up`] for a display's tick, `/clock` when
//! its time is asked for), and the link's own thread sleeps until the publisher hangs up,
//! reading what queued once every [`DRAIN_EVERY`] so the publisher never sees a lagging
//! subscriber ([`keep_link`]).

use crate::direct::{Arrival, Link, Stopping};
use crate::Lock;
use crate::RosError;
use std::io::ErrorKind;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a link's own thread reads what queued when its owner did not ask: the socket
/// never holds more than a second of messages.
pub const DRAIN_EVERY: Duration = Duration::from_secs(1);

/// The lazy links of one subscription.
///
/// A link's queued frames are taken in one read (up to [`BATCH`] bytes), not one read for
/// each frame's length and one for its body: a drain that finds one message, or none,
/// costs one system call instead of three. Every frame of a read carries the kernel's
/// receive time of the read's last bytes. Reading frame by frame would not give each
/// frame its own: TCP merges segments that queue in order on a socket into one buffer,
/// which keeps the newest one's receive time (Linux's `tcp_try_coalesce`), so frames
/// that waited for their reader share one timestamp however they are read. The newest
/// frame's time, the one that says when a publisher was last heard, is exact.
#[derive(Default)]
pub struct LazyLinks {
    links: Vec<LazyLink>,
}

/// The most one read of a link takes: hundreds of small messages (a `/clock`
/// frame is 12 bytes), few enough bytes that making room for them costs nothing to speak
/// of; a read that fills it is followed by another.
const BATCH: usize = 4 << 10;

/// A linked publisher: its non-blocking stream and the bytes of a frame not yet whole.
struct LazyLink {
    id: u64,
    link: Link,
    stream: TcpStream,
    partial: Vec<u8>,
    /// Where the link's reads land.
    scratch: Vec<u8>,
    /// Why the link can no longer be read (its thread ends it).
    dead: Option<std::io::Error>,
}

impl LazyLinks {
    /// Reads every frame queued on the links (without blocking) and hands each body, with
    /// its arrival and link, to `frame`, in order per link.
    pub fn drain(&mut self, mut frame: impl FnMut(&[u8], Arrival, &Link)) {
        for l in self.links.iter_mut().filter(|l| l.dead.is_none()) {
            if let Err(e) = l.read_batches(&mut frame) {
                // Wakes the link's thread (asleep until a hang-up), which ends the link.
                let _ = l.stream.shutdown(std::net::Shutdown::Both);
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
    /// Reads what is queued in reads of up to [`BATCH`] bytes, handing each whole frame to
    /// `frame` (with the read's receive time) and keeping a partial one for later; a read
    /// that fills less than the batch has taken all there was.
    fn read_batches(
        &mut self,
        frame: &mut impl FnMut(&[u8], Arrival, &Link),
    ) -> std::io::Result<()> {
        // Made once per link: zeroing a batch for every read would cost as much as the
        // system calls it saves.
        self.scratch.resize(BATCH, 0);
        loop {
            let (n, stamp) = match crate::direct::recv_timed(&self.stream, &mut self.scratch) {
                Ok((0, _)) => return Err(ErrorKind::UnexpectedEof.into()),
                Ok(got) => got,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            };
            self.partial.extend_from_slice(&self.scratch[..n]);
            let read = Instant::now();
            let arrival = Arrival {
                wire: stamp.map_or(read, |w| crate::direct::to_instant(w, read)),
                read,
            };
            let mut at = 0;
            while let Some(len) = self.partial.get(at..at + 4) {
                let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
                if len > crate::wire::MAX_MESSAGE {
                    return Err(std::io::Error::new(
                        ErrorKind::InvalidData,
                        format!("a frame of {len} bytes"),
                    ));
                }
                let Some(body) = self.partial.get(at + 4..at + 4 + len) else {
                    break;
                };
                frame(body, arrival, &self.link);
                at += 4 + len;
            }
            self.partial.drain(..at);
            if n < BATCH {
                return Ok(());
            }
        }
    }
}

/// How a link's own thread keeps it ([`keep_link`]).
pub(crate) struct Keep<'a> {
    /// How often it reads what queued when the owner did not ask; `None`: never between
    /// the link's start and end (another thread reads it, [`crate::polled`]).
    pub(crate) drain_every: Option<Duration>,
    /// Called once the link is in the owner's links and once it is out again (so a
    /// thread that watches their sockets looks again).
    pub(crate) changed: &'a (dyn Fn() + Sync),
}

impl Keep<'_> {
    /// A lazy link: read by its owner, and by its own thread every [`DRAIN_EVERY`].
    pub(crate) const LAZY: Keep<'static> = Keep {
        drain_every: Some(DRAIN_EVERY),
        changed: &|| {},
    };
}

/// A lazy link's thread (the `read` of [`crate::direct::subscribe_reading`]): puts the stream,
/// non-blocking, into `links` (under `lock`, reached through `links_of`), then sleeps
/// until the publisher hangs up, calling `drain` (under the lock) at once and as `keep`
/// says. Returns why the link ended, the stream taken out again.
pub(crate) fn keep_link<R>(
    lock: &Mutex<R>,
    links_of: impl Fn(&mut R) -> &mut LazyLinks,
    drain: impl Fn(&mut R),
    link: &Link,
    stream: TcpStream,
    stop: Stopping<'_>,
    keep: Keep<'_>,
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
            scratch: Vec::new(),
            dead: None,
        });
        drain(&mut r);
    }
    (keep.changed)();
    let why = loop {
        let mut fd = libc::pollfd {
            fd: watch.as_raw_fd(),
            // Only a hang-up or an error (always reported) wakes this thread, not data.
            events: libc::POLLRDHUP,
            revents: 0,
        };
        let ms = keep
            .drain_every
            .map_or(-1, |d| d.as_millis().min(i32::MAX as u128) as libc::c_int);
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
    (keep.changed)();
    why
}

/// A subscription read when its owner asks ([`LazySubscriber::catch_up`]), and at least
/// every [`DRAIN_EVERY`]: for a display or a summary that looks at the latest values at
/// its own pace. Messages reach the callback in order, on the thread that reads them.
pub struct LazySubscriber {
    catch_up: Box<dyn Fn() + Send + Sync>,
    /// Held for its links: dropping it unsubscribes.
    _subscriber: crate::direct::DirectSubscriber,
}

/// What a lazy subscriber does with each message.
type OnMessage<T> = Box<dyn FnMut(T, Arrival, &Link) + Send>;

pub(crate) struct LazyState<T> {
    pub(crate) links: LazyLinks,
    on_message: OnMessage<T>,
}

impl<T: rosrust::Message> LazyState<T> {
    /// No links yet.
    pub(crate) fn new(on_message: impl FnMut(T, Arrival, &Link) + Send + 'static) -> Self {
        LazyState {
            links: LazyLinks::default(),
            on_message: Box::new(on_message),
        }
    }

    pub(crate) fn drain(&mut self) {
        let on_message = &mut self.on_message;
        self.links.drain(
            |body, at, link| match T::decode(std::io::Cursor::new(body)) {
                Ok(m) => on_message(m, at, link),
                Err(e) => tracing::warn!("cannot decode a message from {}: {e}", link.uri),
            },
        );
    }
}

impl LazySubscriber {
    /// Reads what queued on every link now, handing each message to the callback.
    pub fn catch_up(&self) {
        (self.catch_up)();
    }

    /// How linking stands, in words ([`crate::direct::DirectSubscriber::link_report`]).
    pub fn link_report(&self) -> String {
        self._subscriber.link_report()
    }
}

/// Subscribes `topic` on this process's node, lazily (see [`LazySubscriber`]); each
/// message comes with its [`Arrival`] (the kernel's receive time, however late it is read)
/// and its link.
pub fn subscribe_lazily<T: rosrust::Message>(
    topic: &str,
    on_message: impl FnMut(T, Arrival, &Link) + Send + 'static,
) -> Result<LazySubscriber, RosError> {
    subscribe_lazily_linked(topic, |_| {}, on_message)
}

/// [`subscribe_lazily`], with `on_link` run once per link made (before its first message).
pub fn subscribe_lazily_linked<T: rosrust::Message>(
    topic: &str,
    on_link: impl Fn(&Link) + Send + Sync + 'static,
    on_message: impl FnMut(T, Arrival, &Link) + Send + 'static,
) -> Result<LazySubscriber, RosError> {
    let state = Arc::new(Mutex::new(LazyState::<T>::new(on_message)));
    let node = crate::this_node::get()?;
    let reader = state.clone();
    let subscriber =
        crate::direct::subscribe_reading::<T>(&node, topic, on_link, move |link, stream, stop| {
            keep_link(
                &reader,
                |s| &mut s.links,
                LazyState::drain,
                link,
                stream,
                stop,
                Keep::LAZY,
            )
        })?;
    Ok(LazySubscriber {
        catch_up: Box::new(move || state.locked().drain()),
        _subscriber: subscriber,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    /// Runs `step` until `done` (loopback delivers within microseconds; 5 s bound).
    fn until(mut step: impl FnMut(), mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done() {
            assert!(Instant::now() < deadline, "not within 5 s");
            step();
        }
    }

    /// A loopback connection: the publisher's end, and the subscriber's end as lazy link
    /// `id`.
    fn linked(id: u64) -> (TcpStream, LazyLinks) {
        let mut links = LazyLinks::default();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let writer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (reader, _) = listener.accept().unwrap();
        reader.set_nonblocking(true).unwrap();
        links.links.push(LazyLink {
            id,
            link: Link {
                uri: "http://publisher:1/".into(),
                header: Default::default(),
            },
            stream: reader,
            partial: Vec::new(),
            scratch: Vec::new(),
            dead: None,
        });
        (writer, links)
    }

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut f = (body.len() as u32).to_le_bytes().to_vec();
        f.extend_from_slice(body);
        f
    }

    #[test]
    fn queued_frames_are_read_whole_in_order_and_a_partial_one_waits_for_its_rest() {
        let (mut writer, mut links) = linked(0);
        let read = |links: &mut LazyLinks| {
            let mut got = Vec::new();
            links.drain(|body, _, _| got.push(body.to_vec()));
            got
        };
        assert!(read(&mut links).is_empty(), "nothing queued: no block");
        let third = frame(b"third");
        let mut bytes = [frame(b"one"), frame(b""), third[..6].to_vec()].concat();
        writer.write_all(&bytes).unwrap();
        let got = std::cell::RefCell::new(Vec::new());
        until(
            || got.borrow_mut().extend(read(&mut links)),
            || got.borrow().len() >= 2,
        );
        assert_eq!(got.take(), [b"one".to_vec(), Vec::new()]);
        bytes = third[6..].to_vec();
        writer.write_all(&bytes).unwrap();
        until(
            || got.borrow_mut().extend(read(&mut links)),
            || !got.borrow().is_empty(),
        );
        assert_eq!(got.take(), [b"third".to_vec()]);
        // The publisher hangs up: the link is dead, and says why.
        drop(writer);
        let links = std::cell::RefCell::new(links);
        until(
            || drop(read(&mut links.borrow_mut())),
            || links.borrow().live() == 0,
        );
        let mut links = links.into_inner();
        assert_eq!(
            links.take_dead(0).map(|e| e.kind()),
            Some(ErrorKind::UnexpectedEof)
        );
    }

    #[test]
    fn a_link_takes_many_frames_in_one_read_and_keeps_a_partial_one() {
        let (mut writer, links) = linked(3);
        let links = std::cell::RefCell::new(links);
        let got = std::cell::RefCell::new(Vec::<Vec<u8>>::new());
        let read = || {
            links
                .borrow_mut()
                .drain(|body, _, _| got.borrow_mut().push(body.to_vec()))
        };
        // More than one batch's worth: 500 frames of 8 bytes, then half a frame.
        let mut bytes: Vec<u8> = (0..500u32)
            .flat_map(|i| frame(&[i.to_le_bytes(), [0; 4]].concat()))
            .collect();
        let last = frame(b"the last one");
        bytes.extend_from_slice(&last[..7]);
        writer.write_all(&bytes).unwrap();
        until(read, || got.borrow().len() >= 500);
        let numbers: Vec<u32> = got
            .take()
            .iter()
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(numbers, (0..500).collect::<Vec<u32>>(), "whole, in order");
        writer.write_all(&last[7..]).unwrap();
        until(read, || !got.borrow().is_empty());
        assert_eq!(got.take(), [b"the last one".to_vec()]);
        // A prefix beyond the largest message kills the link, after whole frames.
        writer.write_all(&u32::MAX.to_le_bytes()).unwrap();
        until(read, || links.borrow().live() == 0);
        assert!(got.borrow().is_empty(), "no frame");
        assert_eq!(
            links.borrow_mut().take_dead(3).map(|e| e.kind()),
            Some(ErrorKind::InvalidData)
        );
    }

    #[test]
    fn frames_read_together_carry_the_newest_ones_receive_time() {
        let (mut writer, mut links) = linked(5);
        crate::direct::timestamp_arrivals(&links.links[0].stream).unwrap();
        let start = Instant::now();
        let mut last_write = start..start;
        for i in 0..3u8 {
            // Apart by 5 ms, so that the receive times of the writes differ.
            while start.elapsed() < Duration::from_millis(5 * u64::from(i)) {}
            let before = Instant::now();
            writer.write_all(&frame(&[i])).unwrap();
            last_write = before..Instant::now();
        }
        let got = std::cell::RefCell::new(Vec::new());
        until(
            || links.drain(|body, at, _| got.borrow_mut().push((body[0], at.wire))),
            || got.borrow().len() >= 3,
        );
        let got = got.into_inner();
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [0, 1, 2]);
        // SystemTime and Instant are read a moment apart when one is turned into the
        // other: a millisecond of slack, well under the 5 ms between writes.
        let slack = Duration::from_millis(1);
        for &(i, wire) in &got {
            assert!(
                wire + slack >= last_write.start && wire <= last_write.end + slack,
                "frame {i}: {:?} after the start, the last write {:?}",
                wire - start,
                last_write
            );
        }
    }

    #[test]
    fn a_length_prefix_beyond_the_largest_message_kills_the_link() {
        let (mut writer, links) = linked(7);
        writer.write_all(&u32::MAX.to_le_bytes()).unwrap();
        let links = std::cell::RefCell::new(links);
        until(
            || links.borrow_mut().drain(|_, _, _| panic!("no frame")),
            || links.borrow().live() == 0,
        );
        let mut links = links.into_inner();
        // The link's socket is shut down, which wakes its thread (asleep until a hang-up).
        let mut fd = libc::pollfd {
            fd: links.links[0].stream.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the call.
        unsafe { libc::poll(&mut fd, 1, 0) };
        assert_ne!(
            fd.revents & (libc::POLLRDHUP | libc::POLLHUP),
            0,
            "{}",
            fd.revents
        );
        assert_eq!(
            links.take_dead(7).map(|e| e.kind()),
            Some(ErrorKind::InvalidData)
        );
    }
}
