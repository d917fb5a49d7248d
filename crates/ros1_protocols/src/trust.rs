//! Which hosts may act on this process's nodes: a trust file (YAML, in the spirit of
//! SROS2's permission files) that says, per host, which topics it may publish to our
//! subscribers, which of our services it may call, which services it may serve to our
//! callers, and which slave-API methods that change a node it may call; and the runtime's
//! enforcement of it.
//!
//! Why: ROS 1 has no security. Any host that reaches the master can register a publisher of
//! `/gem/ackermann_cmd` that our subscribers link to, call `/pacmod_bridge/enable`,
//! register its own server of a service our nodes call (`/gazebo/get_model_state`) and
//! answer in its place, or call a node's `shutdown`. On a car that shares a network with
//! laptops, that is one mistyped `rostopic pub` away from moving the car. Here the address
//! of each peer is checked where our runtime meets it:
//!
//! - a subscriber ([`crate::direct`], and so [`crate::lazy`] and [`crate::polled`]) links to
//!   a publisher only if its address may publish the topic ([`Policy::may_publish`]); a
//!   refused publisher is not tried again while the master keeps listing it;
//! - a service server ([`crate::service`]) answers a call (not a `probe`) only if the
//!   caller's address may call it ([`Policy::may_call`]); others get an `error` header that
//!   `rosservice call` prints;
//! - a service client ([`crate::service::Client`]) uses the server the master names only
//!   if the server's address may serve the service ([`Policy::may_serve`]): the
//!   connection is closed before anything is sent on it, and the call fails with
//!   `refused: <address> may not serve <service> (trust file)` (the next call asks the
//!   master again);
//! - the slave API ([`crate::runtime::slave`]) takes `publisherUpdate` and `paramUpdate`
//!   only from an address with `node_api` ([`Policy::may_change_node`]) and `shutdown`
//!   only from one with `shutdown` ([`Policy::may_shut_down`]); its read-only methods and
//!   `requestTopic` stay open: any host may subscribe;
//! - the master's own `shutdown` (caller id `/master`: another process registered this
//!   node's name, and the master asks the old holder to go) is refused whatever the
//!   address, and the node registers again, taking its name back (any host can register
//!   any name at the master: otherwise one registration would end any node).
//!
//! Each refusal is counted in a registry ([`refusals`], [`refusal_summary`] for a node's
//! diagnostics) and logged the first time (then at the 10th, 100th, ... attempt), naming
//! the address, the caller id (for a refused server, its `rosrpc://` URI) and what it
//! tried.
//!
//! With no policy [`install`]ed (or after [`uninstall`]) everything is allowed, as ROS 1
//! does.
//!
//! The file:
//!
//! ```yaml
//! hosts:                    # optional: named address sets
//!   car: [self]             # self: every address of this computer (loopback included)
//!   laptops: [192.168.1.30, 10.0.0.0/24]   # IPv4/IPv6 addresses or CIDR ranges
//!   master: [192.168.1.10]  # the master's computer, if it is not the car
//! rules:                    # a host may do what any rule naming it grants;
//!   - hosts: [car]          #   a host no rule names may only subscribe
//!     publish: ["*"]        # topics: exact names, "*" (all), or a prefix glob /gem/*
//!     call: ["*"]           # our services it may call: the same patterns
//!     serve: ["*"]          # services it may serve to our callers: the same patterns
//!     node_api: true        # publisherUpdate, paramUpdate (default false)
//!     shutdown: true        # shutdown: `rosnode kill` (default false)
//!   - hosts: [laptops]
//!     publish: [/initialpose]
//!   - hosts: [master]
//!     node_api: true
//! ```
//!
//! Every grant is optional: `publish`, `call` and `serve` default to none, `node_api` and
//! `shutdown` to false. So under a trust file our service clients use only servers on
//! hosts a rule gives `serve` (a file written before `serve` existed lets them use
//! none: give the computer the services run on, usually `self`, `serve: ["*"]`).
//!
//! A rule's `hosts` are names from `hosts:`, `self`, or addresses and ranges written out.
//! A pattern `/gem/*` matches every name under `/gem/` (at any depth), not `/gem` itself.
//! IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) count as the IPv4 address. `self` is
//! read from the interfaces (`getifaddrs`) at each check, so an address the computer gets
//! later counts.
//!
//! The master calls `publisherUpdate` (a topic's publishers changed) and `paramUpdate` on
//! our nodes: the master's host needs `node_api: true`, or our subscriptions only learn of
//! publishers when they register. It does not need `shutdown`: the one `shutdown` the
//! master sends is refused all the same (above). `rosnode kill` sends `shutdown` from the
//! host it runs on, which needs `shutdown: true`.
//!
//! What it cannot do:
//!
//! - The rosmaster itself stays open: any host can register and unregister publishers,
//!   subscribers and services under any node's name, set and delete parameters our nodes
//!   read, or shut the master down. A refused publisher still shows in `rostopic info`;
//!   a service whose registration a host took over is refused to our clients at each call
//!   (a client already connected keeps its connection) until its real server registers it
//!   again (when that node restarts); a node whose name another
//!   process registered takes it back, and two processes of ours under one name, both
//!   under a trust file, take it from each other about once a second until one ends.
//! - It checks addresses, not identities: a caller id is whatever the peer says it is (it
//!   is recorded for the log only), every process on a trusted host is trusted (a process
//!   on a host with `serve` may serve any service the patterns name, in place of the real
//!   server), and a host that can forge its address on the network passes. Nothing is
//!   encrypted, and any host may still subscribe to (read) every topic.
//! - It guards what runs on this runtime: nodes of rospy or roscpp (rviz, the rosbridge,
//!   the master) are as open as ever, and their service clients take any server.
//! - A publisher is refused after its connection is made (the peer's address is known
//!   then): it has been asked `requestTopic` and sent our connection header. A refused
//!   server has had a TCP connection made to it, nothing sent on it.

use crate::Lock;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Why a trust file was not taken; each names the item at fault.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The file could not be read.
    #[error("cannot read the trust file {}: {error}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// Not YAML, or not of the file's shape (an unknown or misspelt key, a wrong type, a
    /// missing `rules:`).
    #[error("not a valid trust file: {0}")]
    Yaml(serde_yaml::Error),
    /// A rule names a host that is neither under `hosts:`, nor `self`, nor an address.
    #[error(
        "rule {rule}: unknown host name {name:?} (not defined under `hosts:`, not `self`, \
         not an IP address or range; host names are not looked up)"
    )]
    UnknownHost {
        /// The rule's place in `rules:`, from 1.
        rule: usize,
        /// The name.
        name: String,
    },
    /// An address or range that does not parse, or a prefix longer than the address.
    #[error("{place}: bad address or range {item:?}: {why}")]
    BadAddress {
        /// Where: `hosts: <name>` or `rule <n>`.
        place: String,
        /// The item as written.
        item: String,
        /// What is wrong with it.
        why: String,
    },
    /// A name under `hosts:` that could be mistaken for an address or for `self`.
    #[error("hosts: bad name {name:?}: {why}")]
    BadHostName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// A topic or service pattern that is not a name, `*` or a prefix glob.
    #[error("rule {rule}: bad {field} pattern {pattern:?}: {why}")]
    BadPattern {
        /// The rule's place in `rules:`, from 1.
        rule: usize,
        /// `publish`, `call` or `serve`.
        field: &'static str,
        /// The pattern as written.
        pattern: String,
        /// What is wrong with it.
        why: String,
    },
    /// A rule with an empty `hosts:` list.
    #[error("rule {rule}: `hosts:` names no host")]
    NoHosts {
        /// The rule's place in `rules:`, from 1.
        rule: usize,
    },
    /// An error in a file ([`Policy::load`]), with the file's path.
    #[error("{}: {error}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error in it.
        error: Box<TrustError>,
    },
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileText {
    #[serde(default)]
    hosts: Option<BTreeMap<String, Vec<String>>>,
    rules: Vec<RuleText>,
}

/// One rule as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleText {
    hosts: Vec<String>,
    #[serde(default)]
    publish: Option<Vec<String>>,
    #[serde(default)]
    call: Option<Vec<String>>,
    #[serde(default)]
    serve: Option<Vec<String>>,
    #[serde(default)]
    node_api: bool,
    #[serde(default)]
    shutdown: bool,
}

/// A trust file, parsed: who may publish, call, serve, and change or shut down a node.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Vec<Rule>,
    source: Option<PathBuf>,
}

#[derive(Debug, Clone)]
struct Rule {
    hosts: Vec<Host>,
    publish: Vec<Pattern>,
    call: Vec<Pattern>,
    serve: Vec<Pattern>,
    node_api: bool,
    shutdown: bool,
}

/// A host a rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    /// This computer ([`is_this_computer`]).
    This,
    Net(Net),
}

/// An address range; an address is a range of its full length. IPv4-mapped IPv6 ranges
/// are kept as IPv4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Net {
    /// The first address (host bits cleared).
    addr: IpAddr,
    prefix: u8,
}

/// A topic or service pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// `*`.
    Any,
    /// `/name`.
    Exact(String),
    /// `/prefix/*`: the prefix with its trailing `/`.
    Under(String),
}

impl Pattern {
    fn parse(text: &str) -> Result<Pattern, String> {
        if text == "*" {
            return Ok(Pattern::Any);
        }
        if !text.starts_with('/') {
            return Err(
                "not a graph name starting with `/`, nor `*` (names in the trust \
                        file are absolute: they are not resolved against any node)"
                    .into(),
            );
        }
        let (name, under) = match text.strip_suffix("/*") {
            Some(prefix) => (prefix, true),
            None => (text, false),
        };
        if name.contains('*') {
            return Err(
                "`*` stands alone or as the last part after a `/` (`/gem/*`), nowhere else".into(),
            );
        }
        // `/*` is a prefix glob of the root: every name.
        let valid = (under && name.is_empty())
            || name.strip_prefix('/').is_some_and(|rest| {
                rest.split('/').all(|part| {
                    !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            });
        if !valid {
            return Err(
                "not a valid ROS graph name (parts of letters, digits and `_` \
                        between single `/`s)"
                    .into(),
            );
        }
        Ok(if under {
            Pattern::Under(format!("{name}/"))
        } else {
            Pattern::Exact(name.to_owned())
        })
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            Pattern::Any => true,
            Pattern::Exact(n) => n == name,
            Pattern::Under(prefix) => name.len() > prefix.len() && name.starts_with(prefix),
        }
    }
}

/// `ip`, an IPv4-mapped IPv6 address as its IPv4 address.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn mask_v4(a: Ipv4Addr, prefix: u8) -> Ipv4Addr {
    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
    Ipv4Addr::from(u32::from(a) & mask)
}

fn mask_v6(a: Ipv6Addr, prefix: u8) -> Ipv6Addr {
    let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
    Ipv6Addr::from(u128::from(a) & mask)
}

impl Net {
    /// `a.b.c.d`, `a.b.c.d/n`, an IPv6 address, `x::/n`.
    fn parse(text: &str) -> Result<Net, String> {
        let (addr_text, prefix_text) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr_text
            .parse()
            .map_err(|_| format!("{addr_text:?} is not an IPv4 or IPv6 address"))?;
        let (most, family) = match addr {
            IpAddr::V4(_) => (32u8, "IPv4"),
            IpAddr::V6(_) => (128u8, "IPv6"),
        };
        let prefix = match prefix_text {
            None => most,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|n| *n <= most && p.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| {
                    format!("prefix /{p}: a range's prefix is 0 to {most} bits for {family}")
                })?,
        };
        Ok(match addr {
            IpAddr::V4(a) => Net {
                addr: IpAddr::V4(mask_v4(a, prefix)),
                prefix,
            },
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) if prefix >= 96 => Net {
                    addr: IpAddr::V4(mask_v4(v4, prefix - 96)),
                    prefix: prefix - 96,
                },
                _ => Net {
                    addr: IpAddr::V6(mask_v6(a, prefix)),
                    prefix,
                },
            },
        })
    }

    /// Whether `ip` (canonical) is in the range.
    fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(a)) => mask_v4(a, self.prefix) == net,
            (IpAddr::V6(net), IpAddr::V6(a)) => mask_v6(a, self.prefix) == net,
            _ => false,
        }
    }
}

/// Whether a host item that is not a known name was meant as an address (so that its
/// error says what is wrong with the address, not that the name is unknown).
fn looks_like_address(item: &str) -> bool {
    item.contains(['/', ':']) || item.starts_with(|c: char| c.is_ascii_digit())
}

impl Policy {
    /// Parses a trust file's text.
    pub fn parse(yaml: &str) -> Result<Policy, TrustError> {
        let text: FileText = serde_yaml::from_str(yaml).map_err(TrustError::Yaml)?;
        let mut sets: BTreeMap<String, Vec<Host>> = BTreeMap::new();
        for (name, items) in text.hosts.unwrap_or_default() {
            let bad_name = |why: &str| TrustError::BadHostName {
                name: name.clone(),
                why: why.to_owned(),
            };
            if name == "self" {
                return Err(bad_name("`self` is this computer already"));
            }
            if name.is_empty() || looks_like_address(&name) {
                return Err(bad_name(
                    "a name starts with a letter and holds no `/` or `:` (it could be \
                     taken for an address)",
                ));
            }
            let place = format!("hosts: {name}");
            let hosts = items
                .iter()
                .map(|item| {
                    if item == "self" {
                        return Ok(Host::This);
                    }
                    Net::parse(item)
                        .map(Host::Net)
                        .map_err(|why| TrustError::BadAddress {
                            place: place.clone(),
                            item: item.clone(),
                            why: format!(
                                "{why} (a set under `hosts:` holds `self`, addresses and ranges)"
                            ),
                        })
                })
                .collect::<Result<Vec<Host>, TrustError>>()?;
            sets.insert(name, hosts);
        }
        let mut rules = Vec::with_capacity(text.rules.len());
        for (i, rule) in text.rules.into_iter().enumerate() {
            let n = i + 1;
            if rule.hosts.is_empty() {
                return Err(TrustError::NoHosts { rule: n });
            }
            let mut hosts = Vec::new();
            for item in &rule.hosts {
                if item == "self" {
                    hosts.push(Host::This);
                } else if let Some(set) = sets.get(item) {
                    hosts.extend(set.iter().cloned());
                } else if looks_like_address(item) {
                    let net = Net::parse(item).map_err(|why| TrustError::BadAddress {
                        place: format!("rule {n}"),
                        item: item.clone(),
                        why,
                    })?;
                    hosts.push(Host::Net(net));
                } else {
                    return Err(TrustError::UnknownHost {
                        rule: n,
                        name: item.clone(),
                    });
                }
            }
            let patterns = |field: &'static str, list: Option<Vec<String>>| {
                list.unwrap_or_default()
                    .into_iter()
                    .map(|p| {
                        Pattern::parse(&p).map_err(|why| TrustError::BadPattern {
                            rule: n,
                            field,
                            pattern: p.clone(),
                            why,
                        })
                    })
                    .collect::<Result<Vec<Pattern>, TrustError>>()
            };
            rules.push(Rule {
                hosts,
                publish: patterns("publish", rule.publish)?,
                call: patterns("call", rule.call)?,
                serve: patterns("serve", rule.serve)?,
                node_api: rule.node_api,
                shutdown: rule.shutdown,
            });
        }
        Ok(Policy {
            rules,
            source: None,
        })
    }

    /// Reads and parses the trust file at `path`; errors name the file.
    pub fn load(path: &Path) -> Result<Policy, TrustError> {
        let text = std::fs::read_to_string(path).map_err(|error| TrustError::Unreadable {
            path: path.to_owned(),
            error,
        })?;
        let mut policy = Policy::parse(&text).map_err(|e| TrustError::InFile {
            path: path.to_owned(),
            error: Box::new(e),
        })?;
        policy.source = Some(path.to_owned());
        Ok(policy)
    }

    /// The file the policy was loaded from ([`Policy::load`]); `None` when parsed from text.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// Whether `ip` may publish `topic` to our subscribers.
    pub fn may_publish(&self, ip: IpAddr, topic: &str) -> bool {
        self.grants(ip, |r| r.publish.iter().any(|p| p.matches(topic)))
    }

    /// Whether `ip` may call our service `service`.
    pub fn may_call(&self, ip: IpAddr, service: &str) -> bool {
        self.grants(ip, |r| r.call.iter().any(|p| p.matches(service)))
    }

    /// Whether a server at `ip` may serve `service` to our callers (a
    /// [`crate::service::Client`] uses the server the master names only then).
    pub fn may_serve(&self, ip: IpAddr, service: &str) -> bool {
        self.grants(ip, |r| r.serve.iter().any(|p| p.matches(service)))
    }

    /// Whether `ip` may call the slave-API methods that change a node's links and
    /// parameters (`publisherUpdate`, `paramUpdate`): `node_api`.
    pub fn may_change_node(&self, ip: IpAddr) -> bool {
        self.grants(ip, |r| r.node_api)
    }

    /// Whether `ip` may call a node's `shutdown` (`rosnode kill`): `shutdown`. The master's
    /// own `shutdown` is refused whatever this says ([`crate::runtime::slave`]).
    pub fn may_shut_down(&self, ip: IpAddr) -> bool {
        self.grants(ip, |r| r.shutdown)
    }

    /// Whether `ip` may do `act` ([`Policy::may_publish`], [`Policy::may_call`],
    /// [`Policy::may_serve`], and for the slave API [`Policy::may_shut_down`] for
    /// `shutdown`, [`Policy::may_change_node`] for the other methods).
    pub fn allows(&self, ip: IpAddr, act: &Act) -> bool {
        match act {
            Act::Publish(topic) => self.may_publish(ip, topic),
            Act::Call(service) => self.may_call(ip, service),
            Act::Serve(service) => self.may_serve(ip, service),
            Act::NodeApi(method) if method == "shutdown" => self.may_shut_down(ip),
            Act::NodeApi(_) => self.may_change_node(ip),
        }
    }

    /// Whether a rule granting what `grants` looks for names `ip`. The interfaces are
    /// read only for a rule that grants it and names `self`.
    fn grants(&self, ip: IpAddr, grants: impl Fn(&Rule) -> bool) -> bool {
        let ip = canonical(ip);
        let mut this: Option<bool> = None;
        self.rules.iter().filter(|r| grants(r)).any(|r| {
            r.hosts.iter().any(|h| match h {
                Host::This => *this.get_or_insert_with(|| is_this_computer(ip)),
                Host::Net(net) => net.contains(ip),
            })
        })
    }

    /// Why `ip` was refused `act`, for the log: the file, and the rule that would allow it.
    pub(crate) fn refusal_reason(&self, ip: IpAddr, act: &Act) -> String {
        let file = self
            .source()
            .map(|p| format!(" {}", p.display()))
            .unwrap_or_default();
        format!(
            "not allowed by the trust file{file} (a rule naming {} with `{}` would allow it)",
            canonical(ip),
            act.grant()
        )
    }
}

/// Whether `ip` is an address of this computer: loopback, or an address of one of its
/// interfaces (read now, with `getifaddrs`).
pub fn is_this_computer(ip: IpAddr) -> bool {
    let ip = canonical(ip);
    ip.is_loopback() || interface_addresses().contains(&ip)
}

/// Every address of this computer's interfaces; none (loopback is still this computer)
/// if the kernel will not say (logged once).
fn interface_addresses() -> Vec<IpAddr> {
    static WARNED: AtomicBool = AtomicBool::new(false);
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a list this function frees below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        if !WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "trust: cannot list this computer's addresses ({}); `self` is loopback only",
                std::io::Error::last_os_error()
            );
        }
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut at = list;
    while !at.is_null() {
        // SAFETY: a node of the list getifaddrs gave, freed only after the walk.
        let ifa = unsafe { &*at };
        if !ifa.ifa_addr.is_null() {
            // SAFETY: `ifa_addr` points at a socket address whose family gives its type.
            match i32::from(unsafe { (*ifa.ifa_addr).sa_family }) {
                libc::AF_INET => {
                    // SAFETY: an AF_INET address is a sockaddr_in.
                    let sin = unsafe {
                        std::ptr::read_unaligned(ifa.ifa_addr.cast::<libc::sockaddr_in>())
                    };
                    out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                        sin.sin_addr.s_addr,
                    ))));
                }
                libc::AF_INET6 => {
                    // SAFETY: an AF_INET6 address is a sockaddr_in6.
                    let sin6 = unsafe {
                        std::ptr::read_unaligned(ifa.ifa_addr.cast::<libc::sockaddr_in6>())
                    };
                    out.push(canonical(IpAddr::V6(Ipv6Addr::from(
                        sin6.sin6_addr.s6_addr,
                    ))));
                }
                _ => {}
            }
        }
        at = ifa.ifa_next;
    }
    // SAFETY: the list getifaddrs gave, not used after.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// The policy in force in this process, if any.
static INSTALLED: Mutex<Option<Arc<Policy>>> = Mutex::new(None);

/// Puts `policy` in force for every node, subscriber and service of this process,
/// replacing the one before. Links and service connections already made stay; a
/// subscription tries publishers the policy before refused again the next time it links
/// (when the master next updates its publishers).
pub fn install(policy: Policy) {
    let rules = policy.rules.len();
    let source = policy
        .source()
        .map_or_else(|| "(text)".to_owned(), |p| p.display().to_string());
    set(Some(Arc::new(policy)));
    tracing::info!(
        "trust file {source} in force: {rules} rules; hosts no rule names may only subscribe"
    );
}

/// Takes the policy in force out of force, if one is: from now on everything is allowed,
/// as with none [`install`]ed. Links and service connections made meanwhile stay;
/// publishers refused under the policy are tried again when a subscription next links.
/// For a test that needs a process with no policy after one that installed one (the
/// suite's nodes install a trust file once, at start, and keep it).
pub fn uninstall() {
    if INSTALLED.locked().take().is_some() {
        tracing::info!("trust file taken out of force: every host may do anything");
    }
}

fn set(policy: Option<Arc<Policy>>) {
    *INSTALLED.locked() = policy;
}

/// The policy in force ([`install`]), if any; with none, everything is allowed.
pub fn installed() -> Option<Arc<Policy>> {
    INSTALLED.locked().clone()
}

/// What a refused peer tried.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Act {
    /// Publish to the topic (link to one of our subscribers).
    Publish(String),
    /// Call the service.
    Call(String),
    /// Serve the service to our caller (be the server a [`crate::service::Client`] is
    /// sent to by the master).
    Serve(String),
    /// Call this slave-API method on a node.
    NodeApi(String),
}

impl Act {
    /// What a rule says to grant it.
    fn grant(&self) -> String {
        match self {
            Act::Publish(topic) => format!("publish: [{topic}]"),
            Act::Call(service) => format!("call: [{service}]"),
            Act::Serve(service) => format!("serve: [{service}]"),
            Act::NodeApi(method) if method == "shutdown" => "shutdown: true".to_owned(),
            Act::NodeApi(_) => "node_api: true".to_owned(),
        }
    }
}

impl fmt::Display for Act {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Act::Publish(topic) => write!(f, "publish {topic}"),
            Act::Call(service) => write!(f, "call {service}"),
            Act::Serve(service) => write!(f, "serve {service}"),
            Act::NodeApi(method) => write!(f, "node API {method}"),
        }
    }
}

/// Attempts of one kind refused: what, from which address and caller id, how many times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What was tried.
    pub act: Act,
    /// The peer's address.
    pub address: IpAddr,
    /// The caller id the peer gave (its word only), `(none)` if it gave none.
    pub caller_id: String,
    /// Attempts so far.
    pub count: u64,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {} ×{}",
            self.address, self.caller_id, self.act, self.count
        )
    }
}

/// Kinds of refusal listed (one per act, address and caller id); past it, further kinds
/// are counted together, so that a peer making up caller ids cannot grow the list.
pub const MAX_REFUSALS: usize = 256;

/// Kinds listed by [`refusal_summary`] before it says how many more there are.
const SUMMARY_KINDS: usize = 4;

/// The refusals counted, in the order first seen.
struct Registry {
    listed: Vec<Refusal>,
    /// Attempts of kinds past [`MAX_REFUSALS`].
    unlisted: u64,
}

impl Registry {
    const fn new() -> Registry {
        Registry {
            listed: Vec::new(),
            unlisted: 0,
        }
    }

    /// Counts one attempt; its kind's count so far (of the unlisted ones, past
    /// [`MAX_REFUSALS`] kinds).
    fn count(&mut self, act: &Act, address: IpAddr, caller_id: &str) -> u64 {
        if let Some(r) = self
            .listed
            .iter_mut()
            .find(|r| r.address == address && r.act == *act && r.caller_id == caller_id)
        {
            r.count += 1;
            return r.count;
        }
        if self.listed.len() >= MAX_REFUSALS {
            self.unlisted += 1;
            return self.unlisted;
        }
        self.listed.push(Refusal {
            act: act.clone(),
            address,
            caller_id: caller_id.to_owned(),
            count: 1,
        });
        1
    }

    fn summary(&self) -> Option<String> {
        if self.listed.is_empty() {
            return None;
        }
        let mut text = self
            .listed
            .iter()
            .take(SUMMARY_KINDS)
            .map(Refusal::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        let more = self.listed.len().saturating_sub(SUMMARY_KINDS);
        if more > 0 {
            text.push_str(&format!("; … {more} more"));
        }
        if self.unlisted > 0 {
            text.push_str(&format!(" (and {} attempts not listed)", self.unlisted));
        }
        Some(text)
    }
}

static REFUSALS: Mutex<Registry> = Mutex::new(Registry::new());

/// Whether the `count`th attempt of a kind is logged: the 1st, 10th, 100th, ...
pub(crate) fn logged_at(count: u64) -> bool {
    let mut n = count;
    while n > 1 && n.is_multiple_of(10) {
        n /= 10;
    }
    n == 1
}

/// A caller id as recorded: at most 100 characters, no control characters (it goes into
/// logs as the peer sent it), `(none)` if empty.
pub(crate) fn clean_caller(caller_id: &str) -> String {
    if caller_id.is_empty() {
        return "(none)".to_owned();
    }
    let mut clean: String = caller_id
        .chars()
        .take(100)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if caller_id.chars().nth(100).is_some() {
        clean.push('…');
    }
    clean
}

/// What the process is told of each new kind of refusal ([`on_first_refusal`]).
type Hook = Arc<dyn Fn(&Refusal) + Send + Sync>;
static ON_FIRST: Mutex<Option<Hook>> = Mutex::new(None);

/// Calls `hook` with each new kind of refusal (act, address, caller id), the first time it
/// happens, on the thread that refused it (a node reports it on its status: the hook
/// must not block). Replaces any earlier hook; a refusal being reported meanwhile may
/// still go to the earlier one. The hook runs with no lock of this module held, so it may
/// refuse (or install a hook) itself.
pub fn on_first_refusal(hook: impl Fn(&Refusal) + Send + Sync + 'static) {
    *ON_FIRST.locked() = Some(Arc::new(hook));
}

/// Records that `address` (calling itself `caller_id`) was refused `act`, and logs it the
/// first time (then at the 10th, 100th, ... attempt) with `why`; the count so far. The
/// first time, the [`on_first_refusal`] hook hears of it.
pub(crate) fn refuse(act: &Act, address: IpAddr, caller_id: &str, why: &str) -> u64 {
    refuse_in(&REFUSALS, &ON_FIRST, act, address, caller_id, why)
}

/// [`refuse`] into `registry`, telling the hook in `hooks`.
fn refuse_in(
    registry: &Mutex<Registry>,
    hooks: &Mutex<Option<Hook>>,
    act: &Act,
    address: IpAddr,
    caller_id: &str,
    why: &str,
) -> u64 {
    let count = record(registry, act, address, caller_id, why);
    if count == 1 {
        let first = Refusal {
            act: act.clone(),
            address: canonical(address),
            caller_id: clean_caller(caller_id),
            count,
        };
        // Out of the lock before it runs: a hook that is slow, refuses something itself or
        // installs another hook must hold up no other refusal.
        let hook = hooks.locked().clone();
        if let Some(hook) = hook {
            hook(&first);
        }
    }
    count
}

fn record(
    registry: &Mutex<Registry>,
    act: &Act,
    address: IpAddr,
    caller_id: &str,
    why: &str,
) -> u64 {
    let address = canonical(address);
    let caller = clean_caller(caller_id);
    let count = registry.locked().count(act, address, &caller);
    if logged_at(count) {
        let times = if count > 1 {
            format!(" ({count} times now)")
        } else {
            String::new()
        };
        tracing::warn!("refused {address} ({caller}): {act}{times}; {why}");
    }
    count
}

/// Every kind of refusal so far (one per act, address and caller id, at most
/// [`MAX_REFUSALS`]), in the order first seen, with its count of attempts.
pub fn refusals() -> Vec<Refusal> {
    REFUSALS.locked().listed.clone()
}

/// The refusals so far in one short line for a node's diagnostics, e.g.
/// `10.231.0.1 (/rostopic_123): publish /gem/ackermann_cmd ×3; …`; `None` if there were
/// none.
pub fn refusal_summary() -> Option<String> {
    REFUSALS.locked().summary()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "
hosts:
  car: [self]
  laptops: [192.168.1.30, 10.0.0.0/24]
  master: [192.168.1.10]
rules:
  - hosts: [car]
    publish: ['*']
    call: ['*']
    serve: ['*']
    node_api: true
    shutdown: true
  - hosts: [laptops]
    publish: [/initialpose]
  - hosts: [master]
    node_api: true
";

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// An address no interface of a test machine has (TEST-NET-1, RFC 5737).
    const STRANGER: &str = "192.0.2.1";

    #[test]
    fn the_example_parses_and_grants_what_it_says() {
        let p = Policy::parse(EXAMPLE).unwrap();
        assert_eq!(p.source(), None);
        // The car: everything.
        for car in ["127.0.0.1", "::1", "::ffff:127.0.0.1", "127.0.1.1"] {
            assert!(p.may_publish(ip(car), "/gem/ackermann_cmd"), "{car}");
            assert!(p.may_call(ip(car), "/pacmod_bridge/enable"), "{car}");
            assert!(p.may_serve(ip(car), "/gazebo/get_model_state"), "{car}");
            assert!(p.may_change_node(ip(car)), "{car}");
            assert!(p.may_shut_down(ip(car)), "{car}");
        }
        // A laptop: /initialpose only.
        for laptop in ["192.168.1.30", "10.0.0.0", "10.0.0.255", "::ffff:10.0.0.7"] {
            assert!(p.may_publish(ip(laptop), "/initialpose"), "{laptop}");
            assert!(!p.may_publish(ip(laptop), "/gem/ackermann_cmd"), "{laptop}");
            assert!(!p.may_call(ip(laptop), "/pacmod_bridge/enable"), "{laptop}");
            assert!(
                !p.may_serve(ip(laptop), "/gazebo/get_model_state"),
                "{laptop}"
            );
            assert!(!p.may_change_node(ip(laptop)), "{laptop}");
            assert!(!p.may_shut_down(ip(laptop)), "{laptop}");
        }
        // The master's host: publisherUpdate and paramUpdate, not shutdown.
        let master = ip("192.168.1.10");
        assert!(p.may_change_node(master));
        assert!(!p.may_shut_down(master));
        assert!(!p.may_serve(master, "/gazebo/get_model_state"));
        assert!(!p.may_publish(master, "/initialpose"));
        // Anyone else: nothing (it may only subscribe).
        for other in [STRANGER, "10.0.1.1", "192.168.1.31", "2001:db8::1"] {
            assert!(!p.may_publish(ip(other), "/initialpose"), "{other}");
            assert!(!p.may_serve(ip(other), "/initialpose"), "{other}");
            assert!(!p.may_change_node(ip(other)), "{other}");
            assert!(!p.may_shut_down(ip(other)), "{other}");
        }
    }

    #[test]
    fn self_is_loopback_and_every_interface_address() {
        assert!(is_this_computer(ip("127.0.0.1")));
        assert!(is_this_computer(ip("127.0.1.1")));
        assert!(is_this_computer(ip("::1")));
        assert!(is_this_computer(ip("::ffff:127.0.0.1")));
        assert!(!is_this_computer(ip(STRANGER)));
        let addresses = interface_addresses();
        assert!(
            addresses.iter().any(IpAddr::is_loopback),
            "getifaddrs lists lo: {addresses:?}"
        );
        let p = Policy::parse("rules: [{hosts: [self], call: ['*']}]").unwrap();
        for a in &addresses {
            assert!(is_this_computer(*a), "{a}");
            assert!(p.may_call(*a, "/x"), "{a}");
        }
        assert!(!p.may_call(ip(STRANGER), "/x"));
    }

    #[test]
    fn ranges_v4_v6_and_mapped_addresses_match() {
        let p = Policy::parse(
            "rules:
  - hosts: [10.1.0.0/16, '2001:db8::/32', '::ffff:172.16.0.0/108', 192.168.5.7, '0.0.0.0/0']
    call: [/a]
  - hosts: ['fe80::1', 10.2.3.4/24]
    call: [/b]
  - hosts: ['::/0']
    call: [/c]
",
        )
        .unwrap();
        // /0 of IPv4 is every IPv4 address, mapped ones included, and no IPv6 one.
        assert!(p.may_call(ip("8.8.8.8"), "/a"));
        assert!(p.may_call(ip("::ffff:8.8.8.8"), "/a"));
        assert!(!p.may_call(ip("2001:db9::1"), "/a"));
        assert!(p.may_call(ip("2001:db8:ffff::1"), "/a"));
        // ::/0 is every IPv6 address; a mapped one is IPv4.
        assert!(p.may_call(ip("2001:db9::1"), "/c"));
        assert!(!p.may_call(ip("::ffff:8.8.8.8"), "/c"));
        assert!(!p.may_call(ip("8.8.8.8"), "/c"));
        // An address with host bits set names its range; a single address only itself.
        assert!(p.may_call(ip("10.2.3.200"), "/b"));
        assert!(!p.may_call(ip("10.2.4.1"), "/b"));
        assert!(p.may_call(ip("fe80::1"), "/b"));
        assert!(!p.may_call(ip("fe80::2"), "/b"));
        // A mapped range in the file is the IPv4 range: 172.16.0.0/12.
        let only =
            Policy::parse("rules: [{hosts: ['::ffff:172.16.0.0/108'], call: [/m]}]").unwrap();
        assert!(only.may_call(ip("172.31.255.255"), "/m"));
        assert!(only.may_call(ip("::ffff:172.20.0.1"), "/m"));
        assert!(!only.may_call(ip("172.32.0.0"), "/m"));
    }

    #[test]
    fn patterns_are_names_all_or_prefix_globs() {
        let p = Policy::parse(
            "rules: [{hosts: [10.0.0.1], publish: [/gem/*, /initialpose], call: ['/*']}]",
        )
        .unwrap();
        let a = ip("10.0.0.1");
        assert!(p.may_publish(a, "/gem/ackermann_cmd"));
        assert!(p.may_publish(a, "/gem/a/b"));
        assert!(!p.may_publish(a, "/gem"));
        assert!(!p.may_publish(a, "/gemx/a"));
        assert!(p.may_publish(a, "/initialpose"));
        assert!(!p.may_publish(a, "/initialpose2"));
        assert!(!p.may_publish(a, "/initialpose/x"));
        assert!(p.may_call(a, "/anything/at/all"));
        assert!(Pattern::parse("*").unwrap().matches("/x"));
        assert_eq!(
            Pattern::parse("/a_1/b2").unwrap(),
            Pattern::Exact("/a_1/b2".into())
        );
    }

    #[test]
    fn a_host_no_rule_names_may_only_subscribe() {
        let p = Policy::parse("rules: []").unwrap();
        assert!(!p.may_publish(ip("127.0.0.1"), "/x"));
        assert!(!p.may_call(ip("127.0.0.1"), "/x"));
        assert!(!p.may_change_node(ip("127.0.0.1")));
        // Grants add up across rules.
        let p = Policy::parse(
            "hosts: {lab: [10.0.0.0/8]}
rules:
  - {hosts: [lab], publish: [/a]}
  - {hosts: [10.0.0.1], publish: [/b], node_api: true}
  - {hosts: [lab]}",
        )
        .unwrap();
        assert!(p.may_publish(ip("10.0.0.1"), "/a") && p.may_publish(ip("10.0.0.1"), "/b"));
        assert!(p.may_publish(ip("10.0.0.2"), "/a") && !p.may_publish(ip("10.0.0.2"), "/b"));
        assert!(p.may_change_node(ip("10.0.0.1")) && !p.may_change_node(ip("10.0.0.2")));
    }

    #[test]
    fn serve_and_shutdown_are_grants_of_their_own_and_default_to_none() {
        // A file written before `serve` and `shutdown` existed parses; it grants neither.
        let old =
            Policy::parse("rules: [{hosts: [self], publish: ['*'], call: ['*'], node_api: true}]")
                .unwrap();
        let here = ip("127.0.0.1");
        assert!(old.may_change_node(here) && old.may_call(here, "/s"));
        assert!(!old.may_serve(here, "/s"), "serve defaults to none");
        assert!(!old.may_shut_down(here), "node_api does not grant shutdown");
        // `serve` takes the patterns `call` takes, and is checked apart from it.
        let p = Policy::parse(
            "rules:
  - {hosts: [self], serve: [/gazebo/*, /exact], shutdown: true}
  - {hosts: [10.0.0.1], call: ['*']}",
        )
        .unwrap();
        assert!(p.may_serve(here, "/gazebo/get_model_state"));
        assert!(p.may_serve(here, "/exact"));
        assert!(!p.may_serve(here, "/gazebo"));
        assert!(!p.may_serve(here, "/exact2"));
        assert!(!p.may_call(here, "/exact"), "serve is not call");
        assert!(!p.may_serve(ip("10.0.0.1"), "/exact"), "call is not serve");
        assert!(p.may_shut_down(here) && !p.may_change_node(here));
        // `allows` reads each act's own grant.
        assert!(p.allows(here, &Act::Serve("/exact".into())));
        assert!(!p.allows(ip("10.0.0.1"), &Act::Serve("/exact".into())));
        assert!(p.allows(here, &Act::NodeApi("shutdown".into())));
        assert!(!p.allows(here, &Act::NodeApi("paramUpdate".into())));
        assert!(old.allows(here, &Act::NodeApi("publisherUpdate".into())));
        assert!(!old.allows(here, &Act::NodeApi("shutdown".into())));
        // What a refusal says would allow it.
        let reason = p.refusal_reason(ip(STRANGER), &Act::Serve("/exact".into()));
        assert!(
            reason.contains("a rule naming 192.0.2.1 with `serve: [/exact]`"),
            "{reason}"
        );
        let reason = old.refusal_reason(here, &Act::NodeApi("shutdown".into()));
        assert!(reason.contains("with `shutdown: true`"), "{reason}");
        let reason = p.refusal_reason(here, &Act::NodeApi("paramUpdate".into()));
        assert!(reason.contains("with `node_api: true`"), "{reason}");
        // Wrong values are named.
        let e = error("rules: [{hosts: [self], serve: [gazebo/x]}]");
        assert!(
            matches!(
                &e,
                TrustError::BadPattern {
                    rule: 1,
                    field: "serve",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(matches!(
            error("rules: [{hosts: [self], shutdown: [yes]}]"),
            TrustError::Yaml(_)
        ));
        assert!(error("rules: [{hosts: [self], serves: ['*']}]")
            .to_string()
            .contains("serves"));
    }

    fn error(yaml: &str) -> TrustError {
        match Policy::parse(yaml) {
            Ok(p) => panic!("parsed: {p:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn an_unknown_host_name_is_named() {
        let e =
            error("hosts: {car: [self]}\nrules: [{hosts: [car]}, {hosts: [laptop], call: ['*']}]");
        assert!(
            matches!(&e, TrustError::UnknownHost { rule: 2, name } if name == "laptop"),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("rule 2: unknown host name \"laptop\""),
            "{e}"
        );
    }

    #[test]
    fn bad_addresses_and_ranges_are_named() {
        for (yaml, item) in [
            ("rules: [{hosts: [10.0.0.0/33]}]", "10.0.0.0/33"),
            ("rules: [{hosts: ['::/129']}]", "::/129"),
            ("rules: [{hosts: [10.0.0.0/x]}]", "10.0.0.0/x"),
            ("rules: [{hosts: [10.0.0.0/+8]}]", "10.0.0.0/+8"),
            ("rules: [{hosts: [192.168.1.300]}]", "192.168.1.300"),
            ("rules: [{hosts: ['fe80::1%eth0']}]", "fe80::1%eth0"),
        ] {
            let e = error(yaml);
            assert!(
                matches!(&e, TrustError::BadAddress { place, item: i, .. } if place == "rule 1" && i == item),
                "{yaml}: {e:?}"
            );
            assert!(e.to_string().contains(item), "{e}");
        }
        let e = error("hosts: {laptops: [10.0.0.1, laptop2]}\nrules: []");
        assert!(
            matches!(&e, TrustError::BadAddress { place, item, .. } if place == "hosts: laptops" && item == "laptop2"),
            "{e:?}"
        );
        assert!(error("rules: [{hosts: [10.0.0.0/33]}]")
            .to_string()
            .contains("0 to 32 bits"));
    }

    #[test]
    fn bad_host_set_names_are_named() {
        for name in ["self", "10net", "a:b", "a/b"] {
            let e = error(&format!("hosts: {{'{name}': [self]}}\nrules: []"));
            assert!(
                matches!(&e, TrustError::BadHostName { name: n, .. } if n == name),
                "{name}: {e:?}"
            );
        }
    }

    #[test]
    fn bad_patterns_are_named() {
        for pattern in [
            "*foo", "/a/*/b", "relative", "~private", "/a*", "/gem/*x", "", "/", "//a", "/a/",
            "/a b", "**",
        ] {
            let e = error(&format!(
                "rules: [{{hosts: [self], call: ['/ok', '{pattern}']}}]"
            ));
            assert!(
                matches!(&e, TrustError::BadPattern { rule: 1, field: "call", pattern: p, .. } if p == pattern),
                "{pattern:?}: {e:?}"
            );
        }
        let e = error("rules: [{hosts: [self], publish: ['gem/x']}]");
        assert!(
            e.to_string()
                .starts_with("rule 1: bad publish pattern \"gem/x\""),
            "{e}"
        );
    }

    #[test]
    fn yaml_errors_name_the_key_and_a_rule_needs_hosts() {
        // Unknown keys, at the top and in a rule.
        let e = error("rules: []\nhost: {}");
        assert!(
            matches!(e, TrustError::Yaml(_)) && e.to_string().contains("host"),
            "{e}"
        );
        let e = error("rules: [{hosts: [self], publsh: [/a]}]");
        assert!(e.to_string().contains("publsh"), "{e}");
        // A missing `rules:`, a wrong type, not YAML.
        assert!(error("hosts: {car: [self]}").to_string().contains("rules"));
        assert!(matches!(
            error("rules: [{hosts: [self], node_api: maybe}]"),
            TrustError::Yaml(_)
        ));
        assert!(matches!(error("rules: [: ["), TrustError::Yaml(_)));
        assert!(matches!(
            error("rules: [{hosts: []}]"),
            TrustError::NoHosts { rule: 1 }
        ));
    }

    #[test]
    fn a_file_is_read_and_its_errors_name_it() {
        let dir = std::env::temp_dir().join(format!("trust_test_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.yaml");
        std::fs::write(&good, EXAMPLE).unwrap();
        let p = Policy::load(&good).unwrap();
        assert_eq!(p.source(), Some(good.as_path()));
        let reason = p.refusal_reason(ip(STRANGER), &Act::Publish("/gem/x".into()));
        assert!(reason.contains(&good.display().to_string()), "{reason}");
        assert!(
            reason.contains("a rule naming 192.0.2.1 with `publish: [/gem/x]`"),
            "{reason}"
        );
        let bad = dir.join("bad.yaml");
        std::fs::write(&bad, "rules: [{hosts: [nobody]}]").unwrap();
        let e = Policy::load(&bad).unwrap_err();
        assert!(e.to_string().starts_with(&bad.display().to_string()), "{e}");
        assert!(e.to_string().contains("\"nobody\""), "{e}");
        let missing = dir.join("missing.yaml");
        let e = Policy::load(&missing).unwrap_err();
        assert!(matches!(e, TrustError::Unreadable { .. }));
        assert!(
            e.to_string().contains(&missing.display().to_string()),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_kind_is_logged_its_first_tenth_hundredth_time() {
        let logged: Vec<u64> = (0..=2000).filter(|n| logged_at(*n)).collect();
        assert_eq!(logged, [1, 10, 100, 1000]);
    }

    /// A writer of log lines into a shared buffer.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.locked().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_refusal_is_logged_the_first_time_then_at_the_tenth() {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let registry = Mutex::new(Registry::new());
        let act = Act::Publish("/gem/ackermann_cmd".into());
        let policy = Policy::parse(EXAMPLE).unwrap();
        let why = policy.refusal_reason(ip("10.231.0.1"), &act);
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..12 {
                record(&registry, &act, ip("10.231.0.1"), "/rostopic_123", &why);
            }
        });
        let text = String::from_utf8(lines.0.locked().clone()).unwrap();
        let logged: Vec<&str> = text.lines().collect();
        assert_eq!(logged.len(), 2, "{text}");
        assert!(
            logged[0].contains(
                "refused 10.231.0.1 (/rostopic_123): publish /gem/ackermann_cmd; not allowed by \
                 the trust file (a rule naming 10.231.0.1 with `publish: [/gem/ackermann_cmd]` \
                 would allow it)"
            ),
            "{text}"
        );
        assert!(logged[1].contains("(10 times now)"), "{text}");
        assert_eq!(registry.locked().listed[0].count, 12);
    }

    #[test]
    fn refusals_are_counted_per_act_address_and_caller() {
        let registry = Mutex::new(Registry::new());
        let publish = Act::Publish("/gem/ackermann_cmd".into());
        let a = ip("10.231.0.1");
        for _ in 0..3 {
            record(&registry, &publish, a, "/rostopic_123", "why");
        }
        // A mapped address is the same address.
        assert_eq!(
            record(
                &registry,
                &publish,
                ip("::ffff:10.231.0.1"),
                "/rostopic_123",
                "why"
            ),
            4
        );
        assert_eq!(record(&registry, &publish, a, "/other", "why"), 1);
        assert_eq!(
            record(&registry, &Act::NodeApi("shutdown".into()), a, "", "why"),
            1
        );
        let r = registry.locked();
        assert_eq!(r.listed.len(), 3);
        assert_eq!(
            r.listed[0],
            Refusal {
                act: publish.clone(),
                address: a,
                caller_id: "/rostopic_123".into(),
                count: 4
            }
        );
        assert_eq!(r.listed[2].caller_id, "(none)");
        assert_eq!(
            r.summary().unwrap(),
            "10.231.0.1 (/rostopic_123): publish /gem/ackermann_cmd ×4; \
             10.231.0.1 (/other): publish /gem/ackermann_cmd ×1; \
             10.231.0.1 ((none)): node API shutdown ×1"
        );
        assert_eq!(Registry::new().summary(), None);
    }

    #[test]
    fn the_registry_is_bounded_and_caller_ids_are_cleaned() {
        let mut r = Registry::new();
        let act = Act::Call("/s".into());
        for i in 0..MAX_REFUSALS + 5 {
            r.count(&act, ip(STRANGER), &format!("/c{i}"));
        }
        assert_eq!(r.listed.len(), MAX_REFUSALS);
        assert_eq!(r.unlisted, 5);
        let summary = r.summary().unwrap();
        assert!(
            summary.ends_with(&format!(
                "; … {} more (and 5 attempts not listed)",
                MAX_REFUSALS - SUMMARY_KINDS
            )),
            "{summary}"
        );
        assert_eq!(clean_caller("/a\nb"), "/a?b");
        let long = "x".repeat(300);
        assert_eq!(clean_caller(&long).chars().count(), 101);
    }

    #[test]
    fn the_global_registry_and_installing() {
        let caller = format!("/trust_unit_{}", std::process::id());
        let act = Act::Call("/trust_unit/service".into());
        assert_eq!(refuse(&act, ip(STRANGER), &caller, "a test"), 1);
        assert_eq!(refuse(&act, ip(STRANGER), &caller, "a test"), 2);
        let mine: Vec<Refusal> = refusals()
            .into_iter()
            .filter(|r| r.caller_id == caller)
            .collect();
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].count, 2);
        assert!(refusal_summary().is_some());
        // Installing: other tests of this binary read the policy in force, so the one
        // installed here allows everything (as none does), and it is taken away after.
        let everything = Policy::parse(
            "rules: [{hosts: ['0.0.0.0/0', '::/0'], publish: ['*'], call: ['*'], node_api: true}]",
        )
        .unwrap();
        install(everything);
        let p = installed().expect("installed");
        assert!(p.may_change_node(ip(STRANGER)));
        uninstall();
        assert!(installed().is_none());
    }

    #[test]
    fn acts_read_as_what_was_tried() {
        assert_eq!(
            Act::Publish("/gem/ackermann_cmd".into()).to_string(),
            "publish /gem/ackermann_cmd"
        );
        assert_eq!(
            Act::Call("/pacmod_bridge/enable".into()).to_string(),
            "call /pacmod_bridge/enable"
        );
        assert_eq!(
            Act::Serve("/gazebo/get_model_state".into()).to_string(),
            "serve /gazebo/get_model_state"
        );
        assert_eq!(
            Act::NodeApi("shutdown".into()).to_string(),
            "node API shutdown"
        );
    }

    #[test]
    fn the_first_refusal_hook_runs_outside_the_lock() {
        // A registry and a hook of this test's own (a hook left in the process's would
        // hear every other test's refusals).
        static REGISTRY: Mutex<Registry> = Mutex::new(Registry::new());
        static HOOKS: Mutex<Option<Hook>> = Mutex::new(None);
        let act = |service: &str| Act::Call(format!("/trust_hook/{service}"));
        // A hook that refuses something itself and installs a hook: with the hook's lock
        // held while it runs, this would never return.
        let (tx, heard) = std::sync::mpsc::channel::<String>();
        let tx = Mutex::new(tx);
        *HOOKS.locked() = Some(Arc::new(move |r: &Refusal| {
            let _ = tx.locked().send(r.act.to_string());
            if r.act == act("outer") {
                refuse_in(
                    &REGISTRY,
                    &HOOKS,
                    &act("inner"),
                    ip(STRANGER),
                    "/c",
                    "a test",
                );
                *HOOKS.locked() = Some(Arc::new(|_: &Refusal| {}));
            }
        }));
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let n = refuse_in(
                &REGISTRY,
                &HOOKS,
                &act("outer"),
                ip(STRANGER),
                "/c",
                "a test",
            );
            let _ = done_tx.send(n);
        });
        assert_eq!(
            done.recv_timeout(std::time::Duration::from_secs(10)),
            Ok(1),
            "the refusal did not return: the hook ran under the lock"
        );
        let said: Vec<String> = heard.try_iter().collect();
        assert_eq!(said, ["call /trust_hook/outer", "call /trust_hook/inner"]);
        // The hook the hook installed is in force: the first one hears nothing more.
        refuse_in(
            &REGISTRY,
            &HOOKS,
            &act("later"),
            ip(STRANGER),
            "/c",
            "a test",
        );
        assert_eq!(heard.try_iter().count(), 0);
        assert_eq!(REGISTRY.locked().listed.len(), 3);
    }
}
