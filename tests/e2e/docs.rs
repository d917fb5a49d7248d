//! The documentation holds together: the README stays short, every relative link in the
//! README and under docs/ reaches a file (and a heading, for `#anchor` links), and no page
//! or source cites a specification outside the repository.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    gem_testbed::repo_root()
}

/// Every file under `dirs`, recursively.
fn files_under(dirs: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo: Vec<PathBuf> = dirs.iter().map(|d| root().join(d)).collect();
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The Markdown files the project publishes: README, CHANGELOG, docs/**.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    out.extend(
        files_under(&["docs"])
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "md")),
    );
    out
}

/// `](target)` links of a Markdown text, outside code spans and blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop inline code so `a](b)` in code is not a link.
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

fn check_link(page: &Path, target: &str) -> Result<(), String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return Ok(());
    }
    let (file, frag) = target.split_once('#').unwrap_or((target, ""));
    let dest = if file.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().expect("a page's directory").join(file)
    };
    if !dest.exists() {
        return Err(format!("{}: {target}: no such file", page.display()));
    }
    if !frag.is_empty() {
        let text = std::fs::read_to_string(&dest).map_err(|e| e.to_string())?;
        if !anchors(&text).iter().any(|a| a == frag) {
            return Err(format!("{}: {target}: no such heading", page.display()));
        }
    }
    Ok(())
}

#[test]
fn every_relative_link_resolves() {
    let broken: Vec<String> = pages()
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).expect("page");
            links(&text)
                .into_iter()
                .filter_map(|l| check_link(p, &l).err())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_short() {
    let lines = std::fs::read_to_string(root().join("README.md"))
        .expect("README.md")
        .lines()
        .count();
    assert!(lines < 200, "README.md has {lines} lines");
}

#[test]
fn the_specification_cited_is_the_one_in_the_repository() {
    let mut bad = Vec::new();
    let mut files = files_under(&["crates", "tests", "docs", "launch", "runners", "docker"]);
    files.push(root().join("README.md"));
    let needle = ["SPEC", " §"].concat();
    for f in files {
        if let Ok(text) = std::fs::read_to_string(&f) {
            if text.contains(&needle) {
                bad.push(f.display().to_string());
            }
        }
    }
    assert!(
        bad.is_empty(),
        "cite docs/spec.md instead:\n{}",
        bad.join("\n")
    );
}

#[test]
fn anchors_follow_githubs_rule() {
    assert_eq!(anchor(" §2 State manager"), "2-state-manager");
    assert_eq!(anchor("The demo"), "the-demo");
    assert_eq!(
        links("see [a](b.md) and `[c](d)` and [e](f.md#g)"),
        ["b.md", "f.md#g"]
    );
}
