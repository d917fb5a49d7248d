//! The house's shape: dependencies between crates, and between the modules of each crate,
//! run one way.
//!
//! Crates: each depends only on crates listed before it in [`LAYERS`]. Modules: each
//! source file is a module. A module depends on another when its code (comments
//! aside) names it through a `crate::` or `super::` path, an item in it included. A
//! parent that only declares a child (`mod child;`) does not depend on it. The test fails
//! on any cycle, naming the modules around it, so two rooms that point at each other are
//! seen the day they are written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's modules: path (`a::b`, `` for the root) → file.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if name == "bin" && prefix.is_empty() {
                    continue; // binaries are crates of their own
                }
                let mut p = prefix.to_vec();
                p.push(name);
                walk(&path, &p, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut p = prefix.to_vec();
                if !matches!(stem, "mod" | "lib" | "main") {
                    p.push(stem.to_owned());
                }
                out.insert(p.join("::"), path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, &[], &mut out);
    out
}

/// The code of a file without its comments and string literals' contents.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// For each byte of `code`, how many inline modules (`mod m { … }`) enclose it.
fn inline_depths(code: &str) -> Vec<usize> {
    let b = code.as_bytes();
    let mut depths = vec![0; b.len() + 1];
    let (mut braces, mut opened, mut pending) = (0usize, Vec::new(), false);
    let mut i = 0;
    while i < b.len() {
        let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if word_start && b[i..].starts_with(b"mod ") {
            let rest = &code[i + 4..];
            let name_len = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            pending = rest[name_len..].trim_start().starts_with('{');
        }
        match b[i] {
            b'{' => {
                braces += 1;
                if pending {
                    opened.push(braces);
                    pending = false;
                }
            }
            b'}' => {
                if opened.last() == Some(&braces) {
                    opened.pop();
                }
                braces = braces.saturating_sub(1);
            }
            _ => {}
        }
        depths[i] = opened.len();
        i += 1;
    }
    depths
}

/// Every path a file names from `crate::` or `super::`, as module segments relative to the
/// crate root (`use` groups expanded one level: `crate::{a, b::c}` names `a` and `b::c`).
fn named_paths(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let ident = |s: &str| -> (String, usize) {
        let n = s
            .char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(s.len(), |(i, _)| i);
        (s[..n].to_owned(), n)
    };
    // Reads `seg::seg::…` (and one `{…}` group) from the start of `s`.
    fn path_tail(s: &str, ident: &dyn Fn(&str) -> (String, usize)) -> Vec<Vec<String>> {
        let mut segs = Vec::new();
        let mut rest = s;
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                return group[..end]
                    .split(',')
                    .map(|part| {
                        let mut p = segs.clone();
                        p.extend(
                            part.trim()
                                .split("::")
                                .map(|x| ident(x.trim()).0)
                                .filter(|x| !x.is_empty()),
                        );
                        p
                    })
                    .collect();
            }
            let (seg, n) = ident(rest);
            if seg.is_empty() {
                break;
            }
            segs.push(seg);
            rest = &rest[n..];
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        vec![segs]
    }
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].ends_with('$') {
            continue; // a macro's `$crate`: the crate that expands it
        }
        found.extend(path_tail(&code[at + "crate::".len()..], &ident));
    }
    let inline = inline_depths(code);
    for (at, _) in code.match_indices("super::") {
        if code[..at].ends_with("super::") {
            continue; // counted from the first `super::`
        }
        let mut base = here.to_vec();
        let mut rest = &code[at..];
        // Inside an inline `mod m { … }`, the first `super` is the file's own module.
        let mut inside = inline[at];
        while let Some(r) = rest.strip_prefix("super::") {
            if inside > 0 {
                inside -= 1;
            } else {
                base.pop();
            }
            rest = r;
        }
        for tail in path_tail(rest, &ident) {
            let mut p = base.clone();
            p.extend(tail);
            found.push(p);
        }
    }
    found
}

/// The module dependencies of one crate: module → modules it names (itself, its own
/// submodules declared inline and the root excluded).
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let mut graph = BTreeMap::new();
    for (name, file) in &mods {
        let here: Vec<String> = if name.is_empty() {
            vec![]
        } else {
            name.split("::").map(str::to_owned).collect()
        };
        // A file `a/b.rs` is module `a::b`; its `super` is `a`. (For `a/mod.rs`, module
        // `a`, `super` is the crate root.)
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let mut deps = BTreeSet::new();
        for path in named_paths(&code_of(&text), &here) {
            // The longest prefix that is a module file.
            if let Some(t) = (1..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find(|p| mods.contains_key(p))
            {
                deps.insert(t);
            }
        }
        // A child module named by a relative path (`child::Item`) from the file that
        // declares it (`mod child;`).
        let code = code_of(&text);
        for decl in code.split("mod ").skip(1) {
            let Some(child) = decl
                .split(';')
                .next()
                .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_alphanumeric() || ch == '_'))
            else {
                continue;
            };
            let full = if name.is_empty() {
                child.to_owned()
            } else {
                format!("{name}::{child}")
            };
            let named = code.match_indices(&format!("{child}::")).any(|(at, _)| {
                !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
                    || code[..at].ends_with("self::")
            });
            if named && mods.contains_key(&full) {
                deps.insert(full);
            }
        }
        deps.remove(name);
        deps.remove("");
        graph.insert(name.clone(), deps);
    }
    graph
}

/// Every cycle's modules (one list per strongly connected component of more than one
/// module), by Tarjan's algorithm.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The workspace's crates, lowest first: a crate may depend only on crates before it.
const LAYERS: &[&str] = &[
    "gem_core",
    "gem_calibrate",
    "gem_introspect",
    "gem_msgs",
    "ros1_protocols",
    "gem_ros",
    "gem_nodes",
    "gem_profile",
    "gem_plot",
    "gem_testbed",
    "gem_cli",
    "gem_bench",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace crates a manifest depends on (`path = ` dependencies, dev ones included).
fn path_dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{manifest:?}: {e}"));
    text.lines()
        .filter(|l| l.contains("{ path = \"../"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn every_crate_depends_only_on_crates_below_it() {
    let crates: BTreeSet<String> = std::fs::read_dir(root().join("crates"))
        .expect("crates/")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = LAYERS.iter().map(|c| c.to_string()).collect();
    assert_eq!(crates, listed, "crates/ and LAYERS list different crates");
    let mut back = Vec::new();
    for (at, krate) in LAYERS.iter().enumerate() {
        for dep in path_dependencies(&root().join("crates").join(krate).join("Cargo.toml")) {
            match LAYERS.iter().position(|c| *c == dep) {
                Some(d) if d < at => {}
                _ => back.push(format!("{krate} → {dep}")),
            }
        }
    }
    assert!(back.is_empty(), "dependencies against the layers: {back:?}");
}

#[test]
fn no_two_modules_point_at_each_other() {
    let mut roots: Vec<PathBuf> = LAYERS
        .iter()
        .map(|c| root().join("crates").join(c).join("src"))
        .collect();
    roots.extend(["tests/e2e", "tests/harness"].map(|d| root().join(d)));
    for src in &roots {
        assert!(src.is_dir(), "{} is no directory", src.display());
    }
    let found: Vec<String> = roots
        .iter()
        .flat_map(|src| {
            cycles(&module_graph(src))
                .into_iter()
                .map(move |c| format!("{}: {}", src.display(), c.join(" ↔ ")))
        })
        .collect();
    assert!(
        found.is_empty(),
        "modules in a circle:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_circle_is_found() {
    let dir = std::env::temp_dir().join(format!("gem_house_{}", std::process::id()));
    std::fs::create_dir_all(dir.join("a")).unwrap();
    let files = [
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        ("a/mod.rs", "mod inner;\npub use inner::X;\n"),
        (
            "a/inner.rs",
            "pub struct X;\n#[cfg(test)]\nmod tests { use super::*; }\n",
        ),
        // b and c name each other, once through a `use` group.
        ("b.rs", "use crate::{c::Y, a::X};\npub struct Z;\n"),
        (
            "c.rs",
            "// crate::a in a comment is no dependency\npub struct Y(crate::b::Z);\n",
        ),
    ];
    for (path, text) in files {
        std::fs::write(dir.join(path), text).unwrap();
    }
    let graph = module_graph(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(graph["b"], ["a", "c"].map(String::from).into());
    assert_eq!(graph["c"], ["b"].map(String::from).into());
    assert_eq!(graph["a"], ["a::inner"].map(String::from).into());
    assert!(graph["a::inner"].is_empty(), "{graph:?}");
    assert_eq!(cycles(&graph), vec![vec!["b".to_string(), "c".to_string()]]);
}

/// What of rosrust the suite may use: its message traits and types, which its generator
/// (`rosmsg_include!`) implements. Its node runtime, its master client and its bundled
/// messages (`rosrust::msg`) are not used: `ros1_protocols` is the client library.
const ROSRUST_MESSAGE_TYPES: &[&str] = &[
    "Message",
    "RosMsg",
    "ServicePair",
    "RawMessage",
    "RawMessageDescription",
    "Time",
    "Duration",
    "rosmsg_include",
];

/// The files allowed more: the benchmarks that measure rosrust's runtime beside ours.
const ROSRUST_COMPARED_IN: &[&str] = &[
    "crates/gem_bench/src/subscribe.rs",
    "crates/gem_bench/src/service.rs",
];

/// Every name a file's code takes from rosrust: `rosrust::name` and the names of a
/// `use rosrust::{a, b}` group.
fn rosrust_names(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("rosrust::") {
        let rest = &code[at + "rosrust::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            names.extend(group[..end].split(',').map(|n| ident(n.trim())));
        } else {
            names.insert(ident(rest));
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

#[test]
fn the_suite_takes_only_message_types_from_rosrust() {
    let mut files = Vec::new();
    let mut dirs: Vec<PathBuf> = LAYERS
        .iter()
        .map(|c| root().join("crates").join(c).join("src"))
        .collect();
    dirs.extend(["tests", "crates/ros1_protocols/tests"].map(|d| root().join(d)));
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{dir:?}: {e}"))
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut misuse = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(root()).unwrap_or(file);
        if ROSRUST_COMPARED_IN.iter().any(|f| relative == Path::new(f)) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        for name in rosrust_names(&code_of(&text)) {
            if !ROSRUST_MESSAGE_TYPES.contains(&name.as_str()) {
                misuse.push(format!("{}: rosrust::{name}", relative.display()));
            }
        }
    }
    assert!(files.len() > 100, "only {} files read", files.len());
    assert!(
        misuse.is_empty(),
        "rosrust beyond its message types:\n{}",
        misuse.join("\n")
    );
}

#[test]
fn a_use_of_rosrusts_runtime_is_found() {
    let code = "use rosrust::{Message, api::Master};\nfn f() { rosrust::init(\"x\"); let t: rosrust::Time; }";
    let names = rosrust_names(code);
    let wrong: Vec<&String> = names
        .iter()
        .filter(|n| !ROSRUST_MESSAGE_TYPES.contains(&n.as_str()))
        .collect();
    assert_eq!(wrong, ["api", "init"]);
}

/// The modules `runners/test.sh` runs in its laps lane (its `laps=(...)` filters, without
/// the trailing `::`).
fn laps_lane() -> Vec<String> {
    let script = std::fs::read_to_string(root().join("runners/test.sh")).expect("runners/test.sh");
    let list = script
        .split_once("\nlaps=(")
        .and_then(|(_, rest)| rest.split_once(')'))
        .expect("a laps=(...) list in runners/test.sh")
        .0;
    list.split_whitespace()
        .map(|f| f.trim_end_matches("::").to_owned())
        .collect()
}

/// The two lanes of the end-to-end tests share the machine (`gem_testbed::machine`), and
/// `runners/test.sh` schedules them by module: a test that needs the machine alone
/// belongs in the laps lane (in the other it would wait behind a whole lap), and so does
/// each test that launches the car's platform itself (its `signal_sources` listens on the
/// operator link's default port: two at once would collide); the harness's launch
/// (`tests/harness/platform.rs`) gives each launch a free port instead. A filter matches a
/// module's name or the end of it. The docs name the same modules.
#[test]
fn tests_that_need_the_machine_alone_or_the_cars_platform_run_in_the_laps_lane() {
    let laps = laps_lane();
    let e2e = root().join("tests/e2e");
    let mut misplaced = Vec::new();
    for (module, file) in modules(&e2e) {
        let Some(top) = module.split("::").next().filter(|t| !t.is_empty()) else {
            continue; // main.rs: the harness's `scenario` itself
        };
        if top == "house" {
            continue; // this file: it names what it looks for
        }
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let code = code_of(&text);
        let alone = ["exclusive()", "ros_alone()", "scenario("]
            .iter()
            .any(|c| code.contains(c));
        // Outside comments, strings included.
        let lines: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        let car = lines.contains("gem_e2_sim")
            && (lines.contains("integration_run.launch") || lines.contains("supervisor.launch"));
        if (alone || car) && !laps.iter().any(|l| top.ends_with(l.as_str())) {
            misplaced.push(format!(
                "{}: {}",
                file.strip_prefix(root()).unwrap_or(&file).display(),
                if alone {
                    "runs alone"
                } else {
                    "the car's platform"
                }
            ));
        }
    }
    assert!(
        misplaced.is_empty(),
        "outside the laps lane of runners/test.sh ({laps:?}):\n{}",
        misplaced.join("\n")
    );
    let docs = std::fs::read_to_string(root().join("docs/testing.md")).expect("docs/testing.md");
    let undocumented: Vec<&String> = laps
        .iter()
        .filter(|l| !docs.contains(&format!("`{l}::`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "docs/testing.md does not name {undocumented:?} in the laps lane"
    );
    let platform = std::fs::read_to_string(root().join("tests/harness/platform.rs"))
        .expect("tests/harness/platform.rs");
    assert!(
        platform.contains("operator_port:="),
        "tests/harness/platform.rs launches the car's platform without an operator port of \
         its own: its tests would collide with another lane's"
    );
}
