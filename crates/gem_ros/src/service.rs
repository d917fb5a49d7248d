//! A service client whose calls have a timeout.
//!
//! rosrust's client blocks until the server answers and opens a new connection per call
//! (it has no persistent mode). A controller cannot wait on a hung simulator, so calls go
//! to a worker thread and the caller waits at most its timeout. A call that timed out keeps
//! the worker busy until it returns; calls meanwhile time out too, which is what the caller
//! needs to see, and requests whose caller stopped waiting are dropped, not replayed.

use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;
use thiserror::Error;

/// Why a call produced no response.
#[derive(Debug, Error, PartialEq)]
pub enum CallError {
    /// No answer within the timeout.
    #[error("{service}: no answer within {timeout:?}")]
    Timeout {
        /// Service name.
        service: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The transport failed (service not advertised, connection refused...).
    #[error("{service}: {reason}")]
    Failed {
        /// Service name.
        service: String,
        /// The error.
        reason: String,
    },
}

/// A request, where to answer, and when the caller stops waiting.
type Job<T> = (
    <T as rosrust::ServicePair>::Request,
    mpsc::Sender<Result<<T as rosrust::ServicePair>::Response, String>>,
    std::time::Instant,
);

/// A client for service `T` with per-call timeouts.
pub struct TimedClient<T: rosrust::ServicePair> {
    service: String,
    jobs: Mutex<mpsc::Sender<Job<T>>>,
}

impl<T: rosrust::ServicePair> TimedClient<T>
where
    T::Request: Send,
    T::Response: Send,
{
    /// A client of `service`; the worker thread starts now.
    pub fn new(service: &str) -> Result<Self, crate::node::RosError> {
        let client = rosrust::client::<T>(service)?;
        let (tx, rx) = mpsc::channel::<Job<T>>();
        std::thread::spawn(move || {
            for (req, reply, deadline) in rx {
                // A caller that timed out has gone: do not work through a backlog of
                // stale requests after a slow call.
                if std::time::Instant::now() > deadline {
                    continue;
                }
                let answer = match client.req(&req) {
                    Ok(Ok(resp)) => Ok(resp),
                    Ok(Err(msg)) => Err(format!("the service failed: {msg}")),
                    Err(e) => Err(e.to_string()),
                };
                let _ = reply.send(answer);
            }
        });
        Ok(TimedClient {
            service: service.to_owned(),
            jobs: Mutex::new(tx),
        })
    }

    /// Calls the service, waiting at most `timeout`.
    pub fn call(&self, req: T::Request, timeout: Duration) -> Result<T::Response, CallError> {
        let (tx, rx) = mpsc::channel();
        let failed = |reason: String| CallError::Failed {
            service: self.service.clone(),
            reason,
        };
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send((req, tx, std::time::Instant::now() + timeout))
            .map_err(|_| failed("worker stopped".into()))?;
        match rx.recv_timeout(timeout) {
            Ok(answer) => answer.map_err(failed),
            Err(_) => Err(CallError::Timeout {
                service: self.service.clone(),
                timeout,
            }),
        }
    }
}
