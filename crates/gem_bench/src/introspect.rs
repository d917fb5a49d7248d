//! `gem_introspect` figures: µs per message to flatten (decode + keys + values) for a
//! 214-field, 857-byte shape (the size the reference parser is quoted at) and for
//! `sensor_msgs/JointState` with 50 joints, reusing one `Flat` as a stream decoder does.

use gem_core::stats::Summary;
use gem_introspect::{Decoder, Flat};
use std::time::Instant;

const SEP: &str =
    "================================================================================";

struct Shape {
    name: &'static str,
    decoder: Decoder,
    bytes: Vec<u8>,
}

fn header(frame: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(1u32.to_le_bytes());
    b.extend(100u32.to_le_bytes());
    b.extend(5u32.to_le_bytes());
    b.extend((frame.len() as u32).to_le_bytes());
    b.extend(frame.as_bytes());
    b
}

fn header_def() -> String {
    format!("{SEP}\nMSG: std_msgs/Header\nuint32 seq\ntime stamp\nstring frame_id\n")
}

/// Header (3 fields) + 210 float32 + 1 uint8 = 214 fields, 857 bytes.
fn wide() -> Shape {
    let definition = format!(
        "Header header\nfloat32[210] values\nuint8 flag\n{}",
        header_def()
    );
    let mut bytes = header("");
    for i in 0..210 {
        bytes.extend((i as f32 * 0.5).to_le_bytes());
    }
    bytes.push(1);
    Shape {
        name: "214 fields, 857 bytes (Header + float32[210] + uint8)",
        decoder: Decoder::from_definition("bench/Wide", &definition).expect("definition"),
        bytes,
    }
}

/// `sensor_msgs/JointState` with 50 named joints.
fn joint_state() -> Shape {
    let definition = format!(
        "Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n{}",
        header_def()
    );
    let mut bytes = header("base_link");
    bytes.extend(50u32.to_le_bytes());
    for i in 0..50 {
        let name = format!("joint_{i:02}");
        bytes.extend((name.len() as u32).to_le_bytes());
        bytes.extend(name.as_bytes());
    }
    for scale in [1.0, 0.1, 0.01] {
        bytes.extend(50u32.to_le_bytes());
        for i in 0..50 {
            bytes.extend((f64::from(i) * scale).to_le_bytes());
        }
    }
    Shape {
        name: "sensor_msgs/JointState, 50 joints",
        decoder: Decoder::from_definition("sensor_msgs/JointState", &definition)
            .expect("definition"),
        bytes,
    }
}

pub fn run(messages: usize) -> anyhow::Result<()> {
    for shape in [wide(), joint_state()] {
        let mut flat = Flat::default();
        shape.decoder.flatten(&shape.bytes, &mut flat)?;
        let fields = flat.len();
        let mut per_msg_us = Vec::new();
        for _run in 0..7 {
            let start = Instant::now();
            for _ in 0..messages {
                shape
                    .decoder
                    .flatten(std::hint::black_box(&shape.bytes), &mut flat)?;
                std::hint::black_box(flat.len());
            }
            per_msg_us.push(start.elapsed().as_secs_f64() * 1e6 / messages as f64);
        }
        let s = Summary::new(per_msg_us);
        // Cold: a fresh `Flat` per message, every key built and allocated.
        let start = Instant::now();
        let cold_n = messages / 10;
        for _ in 0..cold_n {
            let mut fresh = Flat::default();
            shape
                .decoder
                .flatten(std::hint::black_box(&shape.bytes), &mut fresh)?;
            std::hint::black_box(fresh.len());
        }
        let cold = start.elapsed().as_secs_f64() * 1e6 / cold_n as f64;
        println!(
            "flatten {}: {fields} fields, {} bytes: median {:.3} µs/msg (min {:.3}, max {:.3}; 7 runs × {messages}); cold (fresh Flat, keys built) {cold:.3} µs/msg",
            shape.name,
            shape.bytes.len(),
            s.percentile(50.0),
            s.percentile(0.0),
            s.percentile(100.0)
        );
    }
    println!("  reference: 3.7 µs for a 214-field, 857-byte message");
    Ok(())
}
