use crate::encode::Encoder;
use crate::rename;
use crate::*;

const SEP: &str =
    "================================================================================";

/// `sensor_msgs/JointState` as a bag or TCPROS header carries it.
fn joint_state_definition() -> String {
    format!(
        "# comment\nHeader header\n\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n\
         {SEP}\nMSG: std_msgs/Header\nuint32 seq\ntime stamp\n# a comment\nstring frame_id\n"
    )
}

fn joint_state(names: &[&str], position: &[f64]) -> Vec<u8> {
    let e = Encoder::default().u32(7).u32(100).u32(5).str("base");
    let e = names
        .iter()
        .fold(e.u32(names.len() as u32), |e, n| e.str(n));
    e.f64s(position).f64s(&[]).f64s(&[0.5]).0
}

fn decoder() -> Decoder {
    Decoder::from_definition("sensor_msgs/JointState", &joint_state_definition()).unwrap()
}

fn pairs(f: &Flat) -> Vec<(String, String)> {
    f.iter()
        .map(|(k, v)| (k.to_owned(), v.to_string()))
        .collect()
}

#[test]
fn schema_resolves_header_and_skips_comments() {
    let d = decoder();
    let s = d.schema();
    assert_eq!(s.root(), "sensor_msgs/JointState");
    assert_eq!(s.messages.len(), 2);
    assert_eq!(s.messages[1].name, "std_msgs/Header");
    assert_eq!(s.messages[1].fields.len(), 3);
}

#[test]
fn constants_are_not_fields() {
    let s = schema::Schema::parse(
        "a/B",
        "uint8 OK=0\nuint8 ERROR = 2\nstring S=x # y\nuint8 level\n",
    )
    .unwrap();
    assert_eq!(s.messages[0].fields.len(), 1);
}

#[test]
fn flattens_in_wire_order_with_indices() {
    let mut f = Flat::default();
    decoder()
        .flatten(&joint_state(&["j1", "j2"], &[1.5, -2.0]), &mut f)
        .unwrap();
    let p = pairs(&f);
    let keys: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "header.seq",
            "header.stamp",
            "header.frame_id",
            "name.0",
            "name.1",
            "position.0",
            "position.1",
            "effort.0"
        ]
    );
    assert_eq!(p[1].1, "100.000000005");
    assert_eq!(f.get("position.1"), Some(ValueRef::Float(-2.0)));
    assert_eq!(f.get("name.0"), Some(ValueRef::Str("j1")));
}

#[test]
fn reused_flat_gives_the_same_result_for_a_different_shape() {
    let d = decoder();
    let mut f = Flat::default();
    d.flatten(&joint_state(&["a", "b", "c"], &[1.0, 2.0, 3.0]), &mut f)
        .unwrap();
    d.flatten(&joint_state(&["x"], &[9.0]), &mut f).unwrap();
    let mut fresh = Flat::default();
    d.flatten(&joint_state(&["x"], &[9.0]), &mut fresh).unwrap();
    assert_eq!(pairs(&f), pairs(&fresh));
}

#[test]
fn large_arrays_are_kept_whole_and_later_fields_present() {
    let position: Vec<f64> = (0..1000).map(f64::from).collect();
    let mut f = Flat::default();
    decoder()
        .flatten(&joint_state(&[], &position), &mut f)
        .unwrap();
    assert_eq!(f.get("position.999"), Some(ValueRef::Float(999.0)));
    assert_eq!(f.get("effort.0"), Some(ValueRef::Float(0.5)));
    assert!(f.truncated.is_empty());
}

#[test]
fn a_limit_is_reported_and_skips_on_the_wire() {
    let position: Vec<f64> = (0..150).map(f64::from).collect();
    let names: Vec<String> = (0..150).map(|i| format!("j{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let d = Decoder::new(decoder().schema().clone(), ArrayPolicy::KeepFirst(100));
    let mut f = Flat::default();
    d.flatten(&joint_state(&names, &position), &mut f).unwrap();
    assert_eq!(f.get("position.99"), Some(ValueRef::Float(99.0)));
    assert_eq!(f.get("position.100"), None);
    assert_eq!(f.get("effort.0"), Some(ValueRef::Float(0.5)));
    assert_eq!(
        f.truncated,
        vec![("name".to_string(), 150), ("position".to_string(), 150)]
    );
}

#[test]
fn renamer_turns_indices_into_names() {
    let rules = rename::parse(
        "- {from: 'position.#', name: 'name.#', to: '#.pos'}\n- {from: 'effort.#', name: 'name.#', to: '#.eff'}\n",
    )
    .unwrap();
    let mut f = Flat::default();
    decoder()
        .flatten(
            &joint_state(&["first_joint", "second_joint"], &[0.1, 0.2]),
            &mut f,
        )
        .unwrap();
    rename::apply(&rules, &mut f);
    assert_eq!(f.get("first_joint.pos"), Some(ValueRef::Float(0.1)));
    assert_eq!(f.get("second_joint.pos"), Some(ValueRef::Float(0.2)));
    assert_eq!(f.get("first_joint.eff"), Some(ValueRef::Float(0.5)));
    assert_eq!(f.get("position.0"), None);
    // The names themselves stay, and nothing is lost.
    assert_eq!(f.get("name.0"), Some(ValueRef::Str("first_joint")));
    assert_eq!(f.len(), 8);
}

#[test]
fn renamer_keeps_the_index_without_a_name() {
    let rules = rename::parse("- {from: 'position.#', name: 'name.#', to: '#.pos'}").unwrap();
    let mut f = Flat::default();
    decoder()
        .flatten(&joint_state(&["only"], &[1.0, 2.0]), &mut f)
        .unwrap();
    rename::apply(&rules, &mut f);
    assert_eq!(f.get("only.pos"), Some(ValueRef::Float(1.0)));
    assert_eq!(f.get("position.1"), Some(ValueRef::Float(2.0)));
}

#[test]
fn renamer_rules_need_one_hash_each() {
    let e = rename::parse("- {from: 'position', name: 'name.#', to: '#.pos'}").unwrap_err();
    assert!(e.to_string().contains("exactly one `#`"), "{e}");
}

#[test]
fn truncated_buffer_is_an_error_naming_the_field() {
    let bytes = joint_state(&["j1"], &[1.0]);
    let mut f = Flat::default();
    let e = decoder()
        .flatten(&bytes[..bytes.len() - 3], &mut f)
        .unwrap_err();
    assert!(
        matches!(&e, IntrospectError::Truncated { key, .. } if key.starts_with("effort")),
        "{e}"
    );
}

#[test]
fn trailing_bytes_are_an_error() {
    let mut bytes = joint_state(&[], &[]);
    bytes.push(0);
    let e = decoder().flatten(&bytes, &mut Flat::default()).unwrap_err();
    assert_eq!(e, IntrospectError::Trailing { extra: 1 });
}

#[test]
fn absurd_array_length_is_refused_at_once() {
    let bytes = Encoder::default()
        .u32(0)
        .u32(0)
        .u32(0)
        .str("")
        .u32(u32::MAX)
        .0;
    let e = decoder().flatten(&bytes, &mut Flat::default()).unwrap_err();
    assert!(
        matches!(&e, IntrospectError::Truncated { key, .. } if key == "name"),
        "{e}"
    );
}

#[test]
fn bad_utf8_is_an_error() {
    let mut bytes = Encoder::default().u32(0).u32(0).u32(0).u32(2).0;
    bytes.extend([0xff, 0xfe]);
    let e = decoder().flatten(&bytes, &mut Flat::default()).unwrap_err();
    assert!(matches!(e, IntrospectError::Utf8 { .. }));
}

#[test]
fn definition_errors_are_clear() {
    let missing = schema::Schema::parse("a/B", "Point p\n").unwrap_err();
    assert!(
        missing.to_string().contains("no definition of a/Point"),
        "{missing}"
    );
    let recursive = schema::Schema::parse(
        "a/B",
        &format!("C c\n{SEP}\nMSG: a/C\nB b\n{SEP}\nMSG: a/B\nC c\n"),
    )
    .unwrap_err();
    assert!(
        recursive.to_string().contains("contains itself"),
        "{recursive}"
    );
    let bad = schema::Schema::parse("a/B", "float64 x y\n").unwrap_err();
    assert!(bad.to_string().contains("line 1"), "{bad}");
    let untyped = schema::Schema::parse("B", "float64 x\n").unwrap_err();
    assert!(untyped.to_string().contains("pkg/Type"), "{untyped}");
}

#[test]
fn fixed_arrays_have_no_length_prefix() {
    let d = Decoder::from_definition("a/B", "float64[2] xy\nuint8 tail\n").unwrap();
    let mut bytes = Encoder::default().f64(1.0).f64(2.0).0;
    bytes.push(9);
    let mut f = Flat::default();
    d.flatten(&bytes, &mut f).unwrap();
    assert_eq!(pairs(&f).len(), 3);
    assert_eq!(f.get("tail"), Some(ValueRef::UInt(9)));
}

#[test]
fn byte_is_signed_and_char_unsigned_as_in_ros_1() {
    let d = Decoder::from_definition("a/B", "byte b\nchar c\nbyte[2] bs\n").unwrap();
    let mut f = Flat::default();
    d.flatten(&[0xff, 0xff, 0x80, 0x01], &mut f).unwrap();
    assert_eq!(f.get("b"), Some(ValueRef::Int(-1)));
    assert_eq!(f.get("c"), Some(ValueRef::UInt(255)));
    assert_eq!(f.get("bs.0"), Some(ValueRef::Int(-128)));
    assert_eq!(f.get("bs.1"), Some(ValueRef::Int(1)));
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Any bytes: an entry list or an error, never a panic.
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut f = Flat::default();
            let _ = decoder().flatten(&bytes, &mut f);
        }

        /// A valid message cut anywhere: an error, never a panic.
        #[test]
        fn every_prefix_of_a_valid_message_is_an_error(cut in 0usize..60) {
            let bytes = joint_state(&["j1", "j2"], &[1.0, 2.0]);
            let cut = cut.min(bytes.len() - 1);
            prop_assert!(decoder().flatten(&bytes[..cut], &mut Flat::default()).is_err());
        }

        /// Random definitions never panic the parser.
        #[test]
        fn random_definitions_never_panic(text in "[a-z0-9_/\\[\\] =#\n]{0,80}") {
            let _ = schema::Schema::parse("a/B", &text);
        }
    }
}

#[test]
fn stored_keys_are_not_reused_after_a_renamer_changed_them() {
    let rules = rename::parse("- {from: 'position.#', name: 'name.#', to: '#.pos'}").unwrap();
    let d = decoder();
    let mut f = Flat::default();
    d.flatten(&joint_state(&["a", "b"], &[1.0, 2.0]), &mut f)
        .unwrap();
    rename::apply(&rules, &mut f);
    d.flatten(&joint_state(&["c", "d"], &[3.0, 4.0]), &mut f)
        .unwrap();
    rename::apply(&rules, &mut f);
    assert_eq!(f.get("c.pos"), Some(ValueRef::Float(3.0)));
    assert_eq!(f.get("a.pos"), None);
}

#[test]
fn another_decoder_on_the_same_flat_writes_its_own_keys() {
    let other = Decoder::from_definition("a/B", "float64[2] xy\nuint8 tail\n").unwrap();
    let mut bytes = Encoder::default().f64(1.0).f64(2.0).0;
    bytes.push(9);
    let mut f = Flat::default();
    decoder()
        .flatten(&joint_state(&["j"], &[1.0]), &mut f)
        .unwrap();
    other.flatten(&bytes, &mut f).unwrap();
    assert_eq!(pairs(&f)[0].0, "xy.0");
    assert_eq!(f.get("tail"), Some(ValueRef::UInt(9)));
}

#[test]
fn a_failed_message_does_not_leave_stale_keys() {
    let d = decoder();
    let mut f = Flat::default();
    d.flatten(&joint_state(&["a"], &[1.0]), &mut f).unwrap();
    let good = joint_state(&["a", "b"], &[1.0, 2.0]);
    assert!(d.flatten(&good[..good.len() - 1], &mut f).is_err());
    d.flatten(&good, &mut f).unwrap();
    let mut fresh = Flat::default();
    d.flatten(&good, &mut fresh).unwrap();
    assert_eq!(pairs(&f), pairs(&fresh));
}
