//! The normalized scenario's keys, read from the configuration types themselves: what the
//! contract publishes so that Python's conversion (python/mpsched/scenario/native.py) can be
//! checked against it, a key on one side only failing a test; and the link knobs, each with
//! the type, unit and default Python derives a scenario file's keys from.
//!
//! serde's derived `Deserialize` names a struct's fields when it asks for a struct
//! (`deserialize_struct`); a deserializer that records them there and stops reads them without
//! a second, hand-kept list.

use crate::config::{
    Change, CodelSpec, Config, FlowConfig, GilbertElliottSpec, KnobValue, LinkSpec, PathConfig,
    QueueSpec, SharedLinkConfig, LINK_KNOBS,
};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::Serialize;
use std::fmt;

/// The fields `T` reads, in declaration order.
fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut seen = FieldsSeen(None);
    let _ = T::deserialize(&mut seen);
    seen.0.expect("a struct")
}

/// Each configuration table and its keys: the scenario (`Config`) and the records it holds.
pub fn scenario_keys() -> Vec<(&'static str, &'static [&'static str])> {
    vec![
        ("scenario", fields_of::<Config>()),
        ("path", fields_of::<PathConfig>()),
        ("link", fields_of::<LinkSpec>()),
        ("change", fields_of::<Change>()),
        ("flow", fields_of::<FlowConfig>()),
        ("shared_link", fields_of::<SharedLinkConfig>()),
        ("codel", fields_of::<CodelSpec>()),
        ("gilbert_elliott", fields_of::<GilbertElliottSpec>()),
    ]
}

/// A link knob as the contract publishes it (`config::LINK_KNOBS`, with what `LinkSpec` says).
#[derive(Clone, Debug, Serialize)]
pub struct KnobEntry {
    /// The field of the link's JSON (`jitter_ns`).
    pub key: &'static str,
    /// "int", "float" or "bool": the field's type.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// "ns", "bps" or "bytes" (an integer field named `..._ns`, `..._bps`, `..._bytes`), else "".
    pub unit: &'static str,
    /// What a direction whose JSON leaves the field out has (its `#[serde(default)]`).
    pub default: serde_json::Value,
    /// The least and the most it may be, in its unit (`min` is 0 unless the knob says).
    pub min: f64,
    pub max: Option<f64>,
    pub meaning: &'static str,
}

/// The unit a field's name ends with (`jitter_ns`: "ns"), or "".
pub fn unit_of(key: &str) -> &'static str {
    match key.rsplit_once('_').map(|(_, unit)| unit) {
        Some("ns") => "ns",
        Some("bps") => "bps",
        Some("bytes") => "bytes",
        _ => "",
    }
}

/// Every link knob, with its type and default read from `LinkSpec`.
pub fn link_knobs() -> Vec<KnobEntry> {
    let defaults = LinkSpec::new(1, 0, QueueSpec::Packets(1), 0.0);
    LINK_KNOBS
        .iter()
        .map(|k| {
            let (kind, default) = match (k.get)(&defaults) {
                KnobValue::Int(v) => ("int", serde_json::Value::from(v)),
                KnobValue::Float(v) => ("float", serde_json::Value::from(v)),
                KnobValue::Bool(v) => ("bool", serde_json::Value::from(v)),
            };
            KnobEntry {
                key: k.key,
                kind,
                unit: if kind == "int" { unit_of(k.key) } else { "" },
                default,
                min: k.min.unwrap_or(0.0),
                max: k.max,
                meaning: k.meaning,
            }
        })
        .collect()
}

struct FieldsSeen(Option<&'static [&'static str]>);

#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("fields read")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for &mut FieldsSeen {
    type Error = Stop;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Stop> {
        self.0 = Some(fields);
        Err(Stop)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_are_the_types_fields() {
        let keys = scenario_keys();
        let of = |t: &str| keys.iter().find(|(n, _)| *n == t).unwrap().1;
        assert!(of("scenario").contains(&"duration_ns") && of("scenario").contains(&"paths"));
        assert!(of("link").contains(&"jitter_ns") && of("link").contains(&"fq_codel"));
        assert_eq!(of("codel"), ["target_ns", "interval_ns"]);
    }

    /// Each knob is a field of a link direction, with a default (a link's JSON may leave it
    /// out), a unit only on an integer, and its default within its range; a field whose name
    /// says a unit is an integer; the rule's keys are distinct.
    #[test]
    fn every_knob_is_a_link_field_with_a_default_in_range() {
        let fields = fields_of::<LinkSpec>();
        let knobs = link_knobs();
        let mut names = std::collections::BTreeSet::new();
        for k in &knobs {
            let (key, kind) = (k.key, k.kind);
            assert!(fields.contains(&key), "{key}: not a field of LinkSpec");
            assert!(!k.meaning.is_empty(), "{key}: no meaning");
            let toml = key.strip_suffix(&format!("_{}", k.unit)).unwrap_or(key);
            assert!(names.insert(toml), "{key}: {toml} is another knob's key");
            let with_unit = !unit_of(key).is_empty();
            assert!(!with_unit || kind == "int", "{key}: a {kind} with a unit");
            if let Some(v) = k.default.as_f64() {
                assert!(v >= k.min && k.max.is_none_or(|m| v <= m), "{key}: {v}");
            }
        }
        let jitter = knobs.iter().find(|k| k.key == "jitter_ns").unwrap();
        assert_eq!((jitter.kind, jitter.unit), ("int", "ns"));
        assert_eq!(jitter.default, serde_json::json!(0));
        assert_eq!(unit_of("foo_bytes"), "bytes");
        assert_eq!(unit_of("reorder"), "");
    }

    /// A knob reads its own field: a link whose JSON sets the field to another value than its
    /// default has that value.
    #[test]
    fn every_knob_reads_the_field_it_names() {
        for k in LINK_KNOBS {
            let other = match (k.get)(&LinkSpec::new(1, 0, QueueSpec::Packets(1), 0.0)) {
                KnobValue::Int(v) => serde_json::json!(v + 1),
                KnobValue::Float(v) => serde_json::json!(v + 0.5),
                KnobValue::Bool(v) => serde_json::json!(!v),
            };
            let json = serde_json::json!({
                "rate_bps": 1, "delay_ns": 0, "loss": 0.0, "queue": {"packets": 1}, k.key: other
            });
            let link: LinkSpec = serde_json::from_value(json).unwrap();
            let read = match (k.get)(&link) {
                KnobValue::Int(v) => serde_json::json!(v),
                KnobValue::Float(v) => serde_json::json!(v),
                KnobValue::Bool(v) => serde_json::json!(v),
            };
            assert_eq!(read, other, "{}", k.key);
        }
    }

    /// The range a knob publishes is the one the core enforces.
    #[test]
    fn the_core_refuses_a_knob_out_of_its_range() {
        let mut cfg = crate::build::stms_lab(10_000_000, 1_000_000_000);
        cfg.paths[0].up.jitter_ns = 3_600_000_000_001;
        let e = cfg.validate().unwrap_err();
        assert_eq!(e.field, "paths[0].up.jitter_ns");
        assert!(e.reason.starts_with("must be in [0, 3600000000000]"), "{e}");
        cfg.paths[0].up.jitter_ns = 3_600_000_000_000;
        assert!(cfg.validate().is_ok());
    }
}
