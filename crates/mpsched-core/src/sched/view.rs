//! How `SubflowView` is declared. Its fields are listed once, in `sched/mod.rs`, inside
//! `subflow_view!`, which defines from that list
//!
//! - the struct, each field documented by its meaning;
//! - `SubflowView::FIELDS`, the table of what a Python scheduler sees (attribute, Python type,
//!   unit, meaning): the contract publishes it (`subflow_view`), and `python -m mpsched.docgen`
//!   writes the stub's `class SubflowView` and the view's table in `docs/schedulers.md` from it;
//! - `mpsched_core::subflow_view_fields!`, with which the Python extension builds its
//!   `SubflowView` (`crates/mpsched-py/src/pysched.rs`) without naming a field.
//!
//! A field's Python value follows from its Rust type (`ViewValue`): a count stays an int, a
//! `Dur` or `Time` becomes an int of nanoseconds (its Python name ends in `_ns`), a rate sample
//! an int of bits per second (`_bps`), a `CaState` its name.

use crate::cc::CaState;
use crate::subflow::tx::RateSample;
use crate::time::{Dur, Time};

/// One attribute of the view a Python scheduler sees (`SubflowView::FIELDS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewField {
    /// Its name in Python (`srtt_ns`).
    pub name: &'static str,
    /// The Rust field it comes from, or the method that computes a derived one (`srtt`).
    pub rust: &'static str,
    /// Its Python type without `None` (`int`, `bool`, `Literal["open", ...]`).
    pub py_type: &'static str,
    /// May be `None`.
    pub nullable: bool,
    /// "" for a count, a flag or a name; else "segment", "byte", "ns", "bit/s".
    pub unit: &'static str,
    pub meaning: &'static str,
    /// Computed by a method of `SubflowView` from its fields rather than stored.
    pub derived: bool,
}

impl ViewField {
    /// The Python annotation: `int`, `int | None`, ...
    pub fn annotation(&self) -> String {
        if self.nullable {
            format!("{} | None", self.py_type)
        } else {
            self.py_type.to_owned()
        }
    }
}

/// What a view field's type is in Python: the plain value the extension hands over (an
/// integer, a flag, a name) and its Python type.
pub trait ViewValue {
    type Plain;
    const PY_TYPE: &'static str;
    const NULLABLE: bool = false;
    fn plain(&self) -> Self::Plain;
}

macro_rules! plain {
    ($($t:ty => $py:literal),* $(,)?) => {$(
        impl ViewValue for $t {
            type Plain = $t;
            const PY_TYPE: &'static str = $py;
            fn plain(&self) -> $t {
                *self
            }
        }
    )*};
}

plain!(usize => "int", u64 => "int", u32 => "int", bool => "bool");

/// Nanoseconds.
impl ViewValue for Dur {
    type Plain = u64;
    const PY_TYPE: &'static str = "int";
    fn plain(&self) -> u64 {
        self.as_nanos()
    }
}

/// Nanoseconds of virtual time.
impl ViewValue for Time {
    type Plain = u64;
    const PY_TYPE: &'static str = "int";
    fn plain(&self) -> u64 {
        self.as_nanos()
    }
}

/// Bits per second.
impl ViewValue for RateSample {
    type Plain = u64;
    const PY_TYPE: &'static str = "int";
    fn plain(&self) -> u64 {
        self.bps()
    }
}

impl ViewValue for CaState {
    type Plain = &'static str;
    const PY_TYPE: &'static str = r#"Literal["open", "recovery", "loss"]"#;
    fn plain(&self) -> &'static str {
        match self {
            CaState::Open => "open",
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
        }
    }
}

impl<T: ViewValue> ViewValue for Option<T> {
    type Plain = Option<T::Plain>;
    const PY_TYPE: &'static str = T::PY_TYPE;
    const NULLABLE: bool = true;
    fn plain(&self) -> Option<T::Plain> {
        self.as_ref().map(T::plain)
    }
}

/// Defines `SubflowView` from its list of fields (see the module's documentation). Each field
/// is `rust_name: Type = [python_name, "unit", "meaning"],`; the `derived` block lists, the same
/// way, the methods of the view that Python schedulers also see as attributes.
///
/// It also defines the module `sched::subflow_view_plain` (each Python attribute's plain Rust
/// type, for the extension) and exports `subflow_view_fields!(callback)`, which calls
/// `callback! { stored { field => py_name: PlainType, ... } derived { method => py_name:
/// PlainType, ... } }`.
macro_rules! subflow_view {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $field:ident : $ty:ty = [$py:ident, $unit:literal, $meaning:literal], )*
        }
        derived {
            $( $method:ident : $dty:ty = [$dpy:ident, $dunit:literal, $dmeaning:literal], )*
        }
    ) => {
        // The exported macro's own `$` comes in as a token.
        $crate::sched::view::subflow_view! { @with ($)
            $(#[$meta])*
            pub struct $name { $( $field : $ty = [$py, $unit, $meaning], )* }
            derived { $( $method : $dty = [$dpy, $dunit, $dmeaning], )* }
        }
    };
    (
        @with ($d:tt)
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $field:ident : $ty:ty = [$py:ident, $unit:literal, $meaning:literal], )*
        }
        derived {
            $( $method:ident : $dty:ty = [$dpy:ident, $dunit:literal, $dmeaning:literal], )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( #[doc = $meaning] pub $field: $ty, )*
        }

        impl $name {
            /// Every attribute a Python scheduler sees, the stored fields in order and then
            /// the derived ones: the contract's `subflow_view`.
            pub const FIELDS: &'static [$crate::sched::ViewField] = &[
                $( $crate::sched::ViewField {
                    name: stringify!($py),
                    rust: stringify!($field),
                    py_type: <$ty as $crate::sched::ViewValue>::PY_TYPE,
                    nullable: <$ty as $crate::sched::ViewValue>::NULLABLE,
                    unit: $unit,
                    meaning: $meaning,
                    derived: false,
                }, )*
                $( $crate::sched::ViewField {
                    name: stringify!($dpy),
                    rust: stringify!($method),
                    py_type: <$dty as $crate::sched::ViewValue>::PY_TYPE,
                    nullable: <$dty as $crate::sched::ViewValue>::NULLABLE,
                    unit: $dunit,
                    meaning: $dmeaning,
                    derived: true,
                }, )*
            ];
        }

        /// Each derived attribute is a method of the view returning the declared type.
        #[allow(dead_code)]
        fn _derived_attributes_are_methods(v: &$name) {
            $( let _: $dty = v.$method(); )*
        }

        /// The plain Rust type of each Python attribute (`ViewValue::Plain`), by its Python
        /// name, for `subflow_view_fields!`.
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        pub mod subflow_view_plain {
            use super::*;
            $( pub type $py = <$ty as $crate::sched::ViewValue>::Plain; )*
            $( pub type $dpy = <$dty as $crate::sched::ViewValue>::Plain; )*
        }

        /// Calls `callback! { stored { field => py_name: PlainType, ... } derived { method =>
        /// py_name: PlainType, ... } }` with every field of `SubflowView` as declared in
        /// `mpsched_core::sched` (the Python extension builds its view with it); a field's
        /// value is `ViewValue::plain(&view.field)`, a derived one's
        /// `ViewValue::plain(&view.method())`.
        #[macro_export]
        macro_rules! subflow_view_fields {
            ($d callback:ident) => {
                $d callback! {
                    stored {
                        $( $field => $py : $d crate::sched::subflow_view_plain::$py, )*
                    }
                    derived {
                        $( $method => $dpy : $d crate::sched::subflow_view_plain::$dpy, )*
                    }
                }
            };
        }
    };
}
pub(crate) use subflow_view;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::SubflowView;

    #[test]
    fn the_table_has_every_stored_field_in_order() {
        // The struct's fields as `Debug` shows them (four spaces in, nested values deeper).
        let debug = format!("{:#?}", SubflowView::default());
        let fields: Vec<&str> = debug
            .lines()
            .filter_map(|l| l.strip_prefix("    ")?.split_once(':').map(|(f, _)| f))
            .filter(|f| !f.starts_with(' '))
            .collect();
        let stored: Vec<&str> = SubflowView::FIELDS
            .iter()
            .filter(|f| !f.derived)
            .map(|f| f.rust)
            .collect();
        assert_eq!(stored, fields);
    }

    #[test]
    fn python_names_are_unique_and_carry_their_unit() {
        let mut names: Vec<&str> = SubflowView::FIELDS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            SubflowView::FIELDS.len(),
            "a Python name twice"
        );
        for f in SubflowView::FIELDS {
            let suffix = match f.unit {
                "ns" => "_ns",
                "bit/s" => "_bps",
                "byte" => "_bytes",
                "" | "segment" => "",
                unit => panic!("{}: unit {unit:?} has no Python suffix yet", f.name),
            };
            assert!(
                f.name.ends_with(suffix)
                    && (f.name == f.rust || f.name == format!("{}{suffix}", f.rust)),
                "{} (from {}, in {}): a Python name is the Rust one with its unit's suffix",
                f.name,
                f.rust,
                f.unit
            );
            assert!(
                !f.meaning.is_empty() && !f.meaning.ends_with('.'),
                "{}",
                f.name
            );
        }
    }

    #[test]
    fn ca_state_names_are_its_python_literal() {
        let names: Vec<String> = [CaState::Open, CaState::Recovery, CaState::Loss]
            .iter()
            .map(|s| format!("{:?}", s.plain()))
            .collect();
        assert_eq!(
            CaState::PY_TYPE,
            format!("Literal[{}]", names.join(", ")),
            "every state's name, in order"
        );
    }

    /// The table as the contract publishes it (`cargo test view_table -- --show-output`).
    #[test]
    fn view_table() {
        for f in SubflowView::FIELDS {
            println!(
                "view field {} <- {}{}: {} [{}] {}",
                f.name,
                f.rust,
                if f.derived { "()" } else { "" },
                f.annotation(),
                f.unit,
                f.meaning
            );
        }
        assert!(SubflowView::FIELDS.iter().any(|f| f.name == "srtt_ns"));
    }
}
