//! `ros1_protocols::service` on a real master: rospy's persistent and one-shot callers, rosservice,
//! callers that misbehave, and our client's timeouts and reconnection.

use gem_msgs::std_srvs::{SetBool, SetBoolReq, SetBoolRes};
use gem_testbed::{cli, cli_ok, ros};
use ros1_protocols::service::{advertise, CallError, Client, Service};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(20);

/// A SetBool service that answers `message` = the request, sleeps 1.5 s on `data: true`
/// when `slow`, panics on `data: true` when `panicky`, and records each call's thread.
fn echo(name: &str, slow: bool, panicky: bool) -> (Service, Arc<Mutex<Vec<ThreadId>>>) {
    let threads = Arc::new(Mutex::new(Vec::new()));
    let seen = threads.clone();
    let srv = advertise::<SetBool, _>(name, move |req: SetBoolReq| {
        seen.lock().unwrap().push(std::thread::current().id());
        if req.data && slow {
            std::thread::sleep(Duration::from_millis(1500));
        }
        if req.data && panicky {
            panic!("told to");
        }
        Ok(SetBoolRes {
            success: true,
            message: format!("got {}", req.data),
        })
    })
    .expect("advertise");
    (srv, threads)
}

/// `calls` calls were handled, all on one connection (its thread).
fn assert_one_connection(threads: &Mutex<Vec<ThreadId>>, calls: usize) {
    let threads = threads.lock().unwrap();
    assert_eq!(threads.len(), calls, "{threads:?}");
    assert!(
        threads.iter().all(|t| *t == threads[0]),
        "one connection, one thread: {threads:?}"
    );
}

/// rospy calls `service` three times on one `ServiceProxy`; prints each answer.
fn rospy_calls(service: &str, persistent: bool) -> String {
    let script = format!(
        "import rospy\nfrom std_srvs.srv import SetBool\n\
         p = rospy.ServiceProxy('{service}', SetBool, persistent={})\n\
         for d in (False, True, False):\n    print(p(d).message)\n",
        if persistent { "True" } else { "False" }
    );
    cli_ok("/usr/bin/python3", &["-c", &script], T)
}

#[test]
fn a_persistent_rospy_caller_keeps_one_connection_for_every_call() {
    let _ros = ros();
    let (_srv, threads) = echo("/services/persistent", false, false);
    let out = rospy_calls("/services/persistent", true);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["got false", "got true", "got false"]
    );
    assert_one_connection(&threads, 3);
}

#[test]
fn one_shot_callers_and_rosservice_are_answered() {
    let _ros = ros();
    let (_srv, threads) = echo("/services/one_shot", false, false);
    let out = rospy_calls("/services/one_shot", false);
    assert_eq!(out.lines().count(), 3, "{out}");
    assert_eq!(threads.lock().unwrap().len(), 3);
    let out = cli_ok(
        "rosservice",
        &["call", "/services/one_shot", "data: true"],
        T,
    );
    assert!(out.contains("got true"), "{out}");
    let info = cli_ok("rosservice", &["info", "/services/one_shot"], T);
    assert!(info.contains("Type: std_srvs/SetBool"), "{info}");
    assert!(info.contains("Args: data"), "{info}");
}

/// A raw connection sending `header` fields; returns the stream after reading the server's
/// header, and that header's text.
fn raw_connect(uri: &str, fields: &[(&str, &str)]) -> (TcpStream, String) {
    let mut s = TcpStream::connect(uri.trim_start_matches("rosrpc://")).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let mut body = Vec::new();
    for (k, v) in fields {
        let f = format!("{k}={v}");
        body.extend((f.len() as u32).to_le_bytes());
        body.extend(f.as_bytes());
    }
    s.write_all(&(body.len() as u32).to_le_bytes()).unwrap();
    s.write_all(&body).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut header = vec![0u8; u32::from_le_bytes(len) as usize];
    s.read_exact(&mut header).unwrap();
    (s, String::from_utf8_lossy(&header).into_owned())
}

fn our_call(client: &Client<SetBool>, data: bool) -> Result<String, CallError> {
    client
        .call(&SetBoolReq { data }, Duration::from_secs(5))
        .map(|r| r.message)
}

#[test]
fn a_caller_with_the_wrong_md5_is_refused_and_others_are_still_served() {
    let _ros = ros();
    let (srv, _) = echo("/services/md5", false, false);
    let (_s, header) = raw_connect(
        srv.uri(),
        &[
            ("callerid", "/wrong"),
            ("service", "/services/md5"),
            ("md5sum", "0123456789abcdef0123456789abcdef"),
        ],
    );
    assert!(header.contains("error="), "{header}");
    assert!(header.contains("std_srvs/SetBool"), "{header}");
    let client = Client::<SetBool>::new("/services/md5").unwrap();
    assert_eq!(our_call(&client, true).unwrap(), "got true");
}

#[test]
fn a_caller_that_never_sends_its_header_holds_up_no_one() {
    let _ros = ros();
    let (srv, _) = echo("/services/stalled", false, false);
    // Connected, silent: rosrust's server would wait on it on its only accept thread.
    let _silent: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(srv.uri().trim_start_matches("rosrpc://")).unwrap())
        .collect();
    let client = Client::<SetBool>::new("/services/stalled").unwrap();
    let t0 = Instant::now();
    assert_eq!(our_call(&client, false).unwrap(), "got false");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    let out = cli_ok(
        "rosservice",
        &["call", "/services/stalled", "data: false"],
        T,
    );
    assert!(out.contains("got false"), "{out}");
}

#[test]
fn a_request_that_does_not_decode_gets_an_error_answer_and_the_connection_stays() {
    let _ros = ros();
    let (srv, _) = echo("/services/garbage", false, false);
    let md5 = <SetBool as rosrust::Message>::md5sum();
    let (mut s, header) = raw_connect(
        srv.uri(),
        &[
            ("callerid", "/garbage"),
            ("service", "/services/garbage"),
            ("md5sum", &md5),
            ("persistent", "1"),
        ],
    );
    assert!(!header.contains("error="), "{header}");
    let answer = |s: &mut TcpStream| {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).unwrap();
        let mut body = vec![0u8; u32::from_le_bytes(head[1..].try_into().unwrap()) as usize];
        s.read_exact(&mut body).unwrap();
        (head[0], body)
    };
    // An empty body: a SetBool request needs one byte.
    s.write_all(&0u32.to_le_bytes()).unwrap();
    let (ok, body) = answer(&mut s);
    assert_eq!(ok, 0);
    assert!(
        String::from_utf8_lossy(&body).contains("cannot decode the request"),
        "{body:?}"
    );
    // The same connection then carries a good request.
    s.write_all(&[1, 0, 0, 0, 1]).unwrap();
    let (ok, body) = answer(&mut s);
    assert_eq!(ok, 1);
    assert!(
        String::from_utf8_lossy(&body).contains("got true"),
        "{body:?}"
    );
}

#[test]
fn a_handler_that_panics_answers_an_error_and_the_service_lives_on() {
    let _ros = ros();
    let (_srv, _) = echo("/services/panicky", false, true);
    let client = Client::<SetBool>::new("/services/panicky").unwrap();
    let err = our_call(&client, true).unwrap_err();
    assert!(err.to_string().contains("panicked"), "{err}");
    assert_eq!(our_call(&client, false).unwrap(), "got false");
    let out = cli(
        "rosservice",
        &["call", "/services/panicky", "data: true"],
        T,
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{out:?}"
    );
}

#[test]
fn a_call_that_times_out_keeps_the_connection_and_its_late_answer_is_not_taken_for_the_next() {
    let _ros = ros();
    let (_srv, threads) = echo("/services/slow", true, false);
    let client = Client::<SetBool>::new("/services/slow").unwrap();
    let t0 = Instant::now();
    let err = client
        .call(&SetBoolReq { data: true }, Duration::from_millis(200))
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    // The answer "got true" comes late, on the same connection, and is dropped.
    assert_eq!(our_call(&client, false).unwrap(), "got false");
    assert_eq!(our_call(&client, false).unwrap(), "got false");
    assert_one_connection(&threads, 3);
}

#[test]
fn our_client_finds_a_restarted_service_and_a_gone_one_fails_at_once() {
    let _ros = ros();
    let client = Client::<SetBool>::new("/services/restarted").unwrap();
    let (srv, _) = echo("/services/restarted", false, false);
    assert_eq!(our_call(&client, false).unwrap(), "got false");
    drop(srv);
    let t0 = Instant::now();
    assert!(our_call(&client, false).is_err());
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    let list = cli_ok("rosservice", &["list"], T);
    assert!(
        !list.contains("/services/restarted"),
        "unregistered:\n{list}"
    );
    let (_srv, _) = echo("/services/restarted", false, false);
    assert_eq!(our_call(&client, true).unwrap(), "got true");
}
