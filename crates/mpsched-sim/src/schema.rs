//! Descriptions of what the simulator returns (summary fields, trace columns), declared with
//! the types that carry them so that the two cannot drift. The Python layer, the docs and the
//! testbed read these descriptions through `mpsched._native.contract()`.

use serde::Serialize;

/// One field of a returned record, or one column of a trace table.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Field {
    pub name: &'static str,
    /// "int", "float", "str", "quantiles", or "list[...]" of one of these or of a record.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// May be null (or absent) in a summary.
    pub nullable: bool,
    /// "" for a count or a name; else e.g. "Mbit/s", "s", "ms", "bytes", "segments".
    pub unit: &'static str,
    pub meaning: &'static str,
}

/// The type name a field shows in the contract.
pub trait Kind {
    const KIND: &'static str;
    const NULLABLE: bool = false;
}

macro_rules! kind {
    ($($t:ty => $k:literal),* $(,)?) => { $(impl Kind for $t { const KIND: &'static str = $k; })* };
}

kind!(u64 => "int", u32 => "int", f64 => "float", String => "str", &'static str => "str",
      Vec<String> => "list[str]");

impl<T: Kind> Kind for Option<T> {
    const KIND: &'static str = T::KIND;
    const NULLABLE: bool = true;
}

/// A struct whose every field carries its unit and meaning, with `FIELDS` listing them in
/// declaration order (which is also the serialized order).
macro_rules! described_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $ty:ty = [$unit:literal, $meaning:literal],
            )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name { $( $(#[$fmeta])* pub $field: $ty, )* }

        impl $name {
            pub const FIELDS: &'static [$crate::schema::Field] = &[$(
                $crate::schema::Field {
                    name: stringify!($field),
                    kind: <$ty as $crate::schema::Kind>::KIND,
                    nullable: <$ty as $crate::schema::Kind>::NULLABLE,
                    unit: $unit,
                    meaning: $meaning,
                },
            )*];
        }
    };
}
pub(crate) use described_struct;

/// A trace table: what one row is, and its columns in order.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Table {
    pub name: &'static str,
    pub meaning: &'static str,
    pub columns: &'static [Field],
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&'static Field> {
        self.columns.iter().find(|c| c.name == name)
    }
}

/// A trace column: `dtype` is how the native module sends it ("u64", "u32", "u16", "u8",
/// "f64", "str").
pub const fn col(
    name: &'static str,
    dtype: &'static str,
    unit: &'static str,
    meaning: &'static str,
) -> Field {
    Field {
        name,
        kind: dtype,
        nullable: false,
        unit,
        meaning,
    }
}
