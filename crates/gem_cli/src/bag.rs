//! `gemctl bag info|export`: ROS 1 bags (from Debian's `rosbag record`) read with the
//! `rosbag` crate and flattened with `gem_introspect` using the definitions stored
//! in the bag, so no message package needs to be installed.

use anyhow::{anyhow, bail, Context};
use gem_introspect::{rename, ArrayPolicy, Decoder, Flat, ValueRef};
use rosbag::{ChunkRecord, MessageRecord, RosBag};
use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Topics, types, message counts, time span.
    Info {
        /// The bag.
        bag: PathBuf,
    },
    /// One CSV per topic: a time column, then one column per flattened field.
    Export(ExportArgs),
}

#[derive(clap::Args)]
pub struct ExportArgs {
    /// The bag.
    bag: PathBuf,
    /// Topics to export (default: all).
    #[arg(long = "topic")]
    topics: Vec<String>,
    /// Output directory (one `<topic>.csv` per topic, slashes as `_`).
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// Time column: `receive` (record time) or `header` (`header.stamp`, falling back to the
    /// record time for messages without one).
    #[arg(long, default_value = "receive", value_parser = ["receive", "header"])]
    time: String,
    /// A YAML list of renamer rules `{from, name, to}` (see `gem_introspect::rename`).
    #[arg(long)]
    rename: Option<PathBuf>,
    /// Keep at most this many elements of each array (default: all; cuts are reported).
    #[arg(long)]
    max_array: Option<usize>,
}

pub fn run(cmd: &Command) -> anyhow::Result<()> {
    match cmd {
        Command::Info { bag } => info(bag),
        Command::Export(args) => export(args),
    }
}

/// One connection of the bag.
struct Conn {
    topic: String,
    type_name: String,
    definition: String,
}

/// Calls `f(connection, record time ns, bytes)` for every message, in file order, with a
/// progress line on stderr for long files.
fn for_each_message(
    path: &Path,
    mut f: impl FnMut(&HashMap<u32, Conn>, u32, u64, &[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<HashMap<u32, Conn>> {
    let bag = RosBag::new(path).with_context(|| format!("cannot open {}", path.display()))?;
    let chunks = bag.chunk_records().count().max(1);
    let progress = Progress::new();
    let mut conns = HashMap::new();
    for (i, rec) in bag.chunk_records().enumerate() {
        let ChunkRecord::Chunk(chunk) =
            rec.with_context(|| format!("{}: bad chunk", path.display()))?
        else {
            continue;
        };
        for m in chunk.messages() {
            match m.with_context(|| format!("{}: bad record", path.display()))? {
                MessageRecord::Connection(c) => {
                    conns.insert(
                        c.id,
                        Conn {
                            topic: c.topic.to_owned(),
                            type_name: c.tp.to_owned(),
                            definition: c.message_definition.to_owned(),
                        },
                    );
                }
                MessageRecord::MessageData(d) => f(&conns, d.conn_id, d.time, d.data)?,
            }
        }
        progress.show(i, chunks);
    }
    progress.done();
    Ok(conns)
}

/// A one-line progress indicator on stderr (only on a terminal).
struct Progress {
    tty: bool,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn show(&self, done: usize, of: usize) {
        if self.tty {
            let width = 40;
            let filled = width * (done + 1) / of;
            eprint!(
                "\r[{}{}] chunk {}/{of}",
                "#".repeat(filled.min(width)),
                " ".repeat(width - filled.min(width)),
                done + 1
            );
        }
    }

    fn done(&self) {
        if self.tty {
            eprintln!();
        }
    }
}

fn info(path: &Path) -> anyhow::Result<()> {
    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    let conns = for_each_message(path, |_, conn, t, _| {
        *counts.entry(conn).or_default() += 1;
        first = first.min(t);
        last = last.max(t);
        Ok(())
    })?;
    let mut per_topic: BTreeMap<&str, (&str, u64)> = BTreeMap::new();
    for (id, c) in &conns {
        let e = per_topic.entry(&c.topic).or_insert((&c.type_name, 0));
        e.1 += counts.get(id).copied().unwrap_or(0);
    }
    let total: u64 = counts.values().sum();
    println!("bag:       {}", path.display());
    if total == 0 {
        println!("messages:  0");
    } else {
        println!(
            "duration:  {:.3} s ({:.3} → {:.3})",
            (last - first) as f64 * 1e-9,
            first as f64 * 1e-9,
            last as f64 * 1e-9
        );
        println!("messages:  {total}");
    }
    println!("topics:");
    for (topic, (type_name, n)) in per_topic {
        println!("  {topic:<40} {n:>8} msgs  {type_name}");
    }
    Ok(())
}

/// Per exported topic: its decoder, columns in first-seen order, and its writer.
struct Table {
    decoders: HashMap<u32, Decoder>,
    columns: Vec<String>,
    index: HashMap<String, usize>,
}

fn export(args: &ExportArgs) -> anyhow::Result<()> {
    let rules = match &args.rename {
        Some(f) => rename::parse(
            &std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?,
        )
        .map_err(|e| anyhow!("{}: {e}", f.display()))?,
        None => Vec::new(),
    };
    let policy = args
        .max_array
        .map_or(ArrayPolicy::KeepAll, ArrayPolicy::KeepFirst);
    let wanted = |topic: &str| args.topics.is_empty() || args.topics.iter().any(|t| t == topic);
    // Pass 1: the columns of every exported topic (message shapes may vary).
    let mut tables: BTreeMap<String, Table> = BTreeMap::new();
    let mut flat = Flat::default();
    let mut cut: BTreeMap<String, usize> = BTreeMap::new();
    for_each_message(&args.bag, |conns, id, _, data| {
        let c = &conns[&id];
        if !wanted(&c.topic) {
            return Ok(());
        }
        let table = tables.entry(c.topic.clone()).or_insert_with(|| Table {
            decoders: HashMap::new(),
            columns: Vec::new(),
            index: HashMap::new(),
        });
        if let std::collections::hash_map::Entry::Vacant(slot) = table.decoders.entry(id) {
            let schema = gem_introspect::schema::Schema::parse(&c.type_name, &c.definition)
                .map_err(|e| anyhow!("{} ({}): {e}", c.topic, c.type_name))?;
            slot.insert(Decoder::new(schema, policy));
        }
        table.decoders[&id]
            .flatten(data, &mut flat)
            .map_err(|e| anyhow!("{}: {e}", c.topic))?;
        rename::apply(&rules, &mut flat);
        for (key, n) in &flat.truncated {
            let e = cut.entry(format!("{}: {key}", c.topic)).or_default();
            *e = (*e).max(*n);
        }
        for (key, _) in flat.iter() {
            if !table.index.contains_key(key) {
                table.index.insert(key.to_owned(), table.columns.len());
                table.columns.push(key.to_owned());
            }
        }
        Ok(())
    })?;
    for t in &args.topics {
        if !tables.contains_key(t) {
            bail!("topic {t} is not in {}", args.bag.display());
        }
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    // Pass 2: the rows.
    let mut writers: BTreeMap<String, csv::Writer<std::fs::File>> = BTreeMap::new();
    for (topic, table) in &tables {
        let file = args.out.join(format!(
            "{}.csv",
            topic.trim_start_matches('/').replace('/', "_")
        ));
        let mut w = csv::Writer::from_path(&file)
            .with_context(|| format!("cannot write {}", file.display()))?;
        w.write_record(std::iter::once("time").chain(table.columns.iter().map(String::as_str)))?;
        writers.insert(topic.clone(), w);
        println!(
            "{} → {} ({} columns)",
            topic,
            file.display(),
            table.columns.len() + 1
        );
    }
    let header_time = args.time == "header";
    let mut row: Vec<String> = Vec::new();
    let mut rows = 0u64;
    for_each_message(&args.bag, |conns, id, t, data| {
        let c = &conns[&id];
        let Some(table) = tables.get(&c.topic) else {
            return Ok(());
        };
        table.decoders[&id].flatten(data, &mut flat)?;
        rename::apply(&rules, &mut flat);
        row.clear();
        row.resize(table.columns.len() + 1, String::new());
        let stamp = header_time
            .then(|| match flat.get("header.stamp") {
                Some(ValueRef::Time(s, n)) if s != 0 || n != 0 => Some(format!("{s}.{n:09}")),
                _ => None,
            })
            .flatten();
        row[0] = stamp.unwrap_or_else(|| format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000));
        for (key, v) in flat.iter() {
            row[table.index[key] + 1] = v.to_string();
        }
        writers
            .get_mut(&c.topic)
            .expect("a writer per table")
            .write_record(&row)?;
        rows += 1;
        Ok(())
    })?;
    for (_, mut w) in writers {
        w.flush()?;
    }
    for (what, n) in cut {
        eprintln!(
            "note: {what} had up to {n} elements; kept the first {}",
            args.max_array.unwrap_or(0)
        );
    }
    println!("{rows} rows written");
    std::io::stdout().flush()?;
    Ok(())
}

/// One message of [`read_numbers`]: its record time, its `header.stamp` if it has one, and
/// its numeric fields by flattened name (`output`, `header.stamp`, `f64_cmd`, …).
#[derive(Clone, Debug)]
pub struct Numbers {
    /// When the bag recorded it, s.
    pub record_s: f64,
    /// `header.stamp`, s, if the message has a non-zero one.
    pub stamp_s: Option<f64>,
    /// Every numeric field (strings are left out).
    pub fields: BTreeMap<String, f64>,
}

impl Numbers {
    /// The header's stamp, or the record time for a message without one.
    pub fn time_s(&self) -> f64 {
        self.stamp_s.unwrap_or(self.record_s)
    }

    /// A field, or a clear error naming it and the topic.
    pub fn get(&self, topic: &str, field: &str) -> anyhow::Result<f64> {
        self.fields
            .get(field)
            .copied()
            .ok_or_else(|| anyhow!("{topic} has no numeric field `{field}`"))
    }
}

/// Whether a topic's header stamps can be used: every message has one, and they keep
/// within 0.5 s of the record times (the two drivers may stamp with other clocks, such as
/// GNSS time; the record times are then the one clock both share).
pub fn stamps_usable(messages: &[Numbers]) -> bool {
    messages
        .iter()
        .all(|m| m.stamp_s.is_some_and(|s| (s - m.record_s).abs() <= 0.5))
}

/// The messages of `topics` in the bags, per topic, in time order. A topic no bag holds is
/// simply absent from the result: the caller says which ones it cannot do without.
pub fn read_numbers(
    bags: &[PathBuf],
    topics: &[&str],
) -> anyhow::Result<BTreeMap<String, Vec<Numbers>>> {
    let mut out: BTreeMap<String, Vec<Numbers>> = BTreeMap::new();
    let mut flat = Flat::default();
    for path in bags {
        let mut decoders: HashMap<u32, Decoder> = HashMap::new();
        for_each_message(path, |conns, id, t, data| {
            let c = &conns[&id];
            if !topics.contains(&c.topic.as_str()) {
                return Ok(());
            }
            if let std::collections::hash_map::Entry::Vacant(slot) = decoders.entry(id) {
                let schema = gem_introspect::schema::Schema::parse(&c.type_name, &c.definition)
                    .map_err(|e| anyhow!("{} ({}): {e}", c.topic, c.type_name))?;
                slot.insert(Decoder::new(schema, ArrayPolicy::KeepFirst(0)));
            }
            decoders[&id]
                .flatten(data, &mut flat)
                .map_err(|e| anyhow!("{}: {}: {e}", path.display(), c.topic))?;
            let stamp_s = match flat.get("header.stamp") {
                Some(ValueRef::Time(s, n)) if s != 0 || n != 0 => {
                    Some(f64::from(s) + f64::from(n) * 1e-9)
                }
                _ => None,
            };
            let fields = flat
                .iter()
                .filter_map(|(k, v)| v.as_f64().map(|x| (k.to_owned(), x)))
                .collect();
            out.entry(c.topic.clone()).or_default().push(Numbers {
                record_s: t as f64 * 1e-9,
                stamp_s,
                fields,
            });
            Ok(())
        })?;
    }
    for series in out.values_mut() {
        series.sort_by(|a, b| a.time_s().total_cmp(&b.time_s()));
    }
    Ok(out)
}
