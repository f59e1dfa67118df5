//! One declaration per config field: `config_section!` turns a list of fields — name, type,
//! default, unit, accepted values and documentation — into the section's serde struct, its
//! `Default` (the `baseline` profile) and its schema entries ([`super::schema::FieldDoc`]),
//! so a field cannot have a default without documentation or a range, or the other way round.

/// Whether a value is left out of the serialized config: only an unset optional field
/// (an `Option` that is `None`) is.
pub trait Unset {
    /// The field is optional (`--set path=none` unsets it).
    const OPTIONAL: bool = false;
    /// The value is unset.
    fn is_unset(&self) -> bool {
        false
    }
}

impl<T> Unset for Option<T> {
    const OPTIONAL: bool = true;
    fn is_unset(&self) -> bool {
        self.is_none()
    }
}

impl Unset for u8 {}
impl Unset for u32 {}
impl Unset for u64 {}
impl Unset for f64 {}
impl Unset for bool {}
impl Unset for String {}

/// `serde(skip_serializing_if)` for every config field.
pub fn is_unset<T: Unset>(v: &T) -> bool {
    v.is_unset()
}

/// Declares a config section: `pub struct Name in "prefix" { /// doc  field: Type = default;
/// "unit", kind; ... }` with optional nested sections after the fields
/// (`sections { impair: ImpairConfig }`), whose entries the caller lists after this one's.
macro_rules! config_section {
    (
        $(#[doc = $sdoc:literal])*
        pub struct $name:ident in $prefix:literal {
            $(
                $(#[doc = $doc:literal])*
                $field:ident : $ty:ty = $default:expr ; $unit:literal , $kind:expr ;
            )*
        }
        $( sections { $( $(#[doc = $secdoc:literal])* $sec:ident : $secty:ty ),* $(,)? } )?
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                #[serde(skip_serializing_if = "crate::config::declare::is_unset")]
                pub $field: $ty,
            )*
            $($(
                $(#[doc = $secdoc])*
                pub $sec: $secty,
            )*)?
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $( $field: $default, )*
                    $($( $sec: <$secty>::default(), )*)?
                }
            }
        }

        impl $name {
            /// The section's path and its documentation, which `rnic config show` prints
            /// under the section's header.
            pub const SECTION: (&'static str, &'static str) =
                ($prefix, concat!($($sdoc),*).trim_ascii());

            /// The schema entries of this section's own fields, in declaration order.
            pub const FIELDS: &'static [crate::config::schema::FieldDoc] = &[
                $(
                    crate::config::schema::FieldDoc {
                        path: concat!($prefix, ".", stringify!($field)),
                        unit: $unit,
                        kind: $kind,
                        optional: <$ty as crate::config::declare::Unset>::OPTIONAL,
                        doc: concat!($($doc),*).trim_ascii(),
                    },
                )*
            ];
        }
    };
}

pub(crate) use config_section;

/// Declares a config enum: its variants with the names a config file uses, `NAMES` (the
/// accepted strings, for the schema entry) and serde.
macro_rules! config_enum {
    (
        $(#[doc = $d:literal])*
        pub enum $name:ident {
            $( $(#[doc = $vd:literal])* $variant:ident = $text:literal ),* $(,)?
        }
    ) => {
        $(#[doc = $d])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $( $(#[doc = $vd])* #[serde(rename = $text)] $variant, )*
        }

        impl $name {
            /// The names a config file uses, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($text),*];
        }

        impl crate::config::declare::Unset for $name {}
    };
}

pub(crate) use config_enum;
