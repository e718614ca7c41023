//! Configuration-file values that accept a plain integer in base units or a string
//! with a unit. Each wraps the base-unit integer.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

macro_rules! unit_value {
    ($name:ident, $parse:path, $check:path, $what:literal, $base:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
        pub struct $name(pub u64);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        write!(
                            f,
                            concat!(
                                "a ",
                                $what,
                                " (an integer in ",
                                $base,
                                " or a string with a unit)"
                            )
                        )
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        let v = u64::try_from(v).map_err(|_| {
                            E::custom(format!(
                                concat!("a ", $what, " cannot be negative, got {}"),
                                v
                            ))
                        })?;
                        self.visit_u64(v)
                    }
                    // The same range checks as the string form: `rate = 0` is as
                    // wrong as `rate = "0Gbps"`.
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        $check(v, &v.to_string()).map($name).map_err(E::custom)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        $parse(v).map($name).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

unit_value!(
    Duration,
    crate::units::parse_time,
    crate::units::check_time,
    "duration",
    "picoseconds",
    "A duration in picoseconds: `\"1us\"`, `\"2.5ms\"` or an integer count of picoseconds."
);
unit_value!(
    Rate,
    crate::units::parse_rate,
    crate::units::check_rate,
    "rate",
    "bits per second",
    "A rate in bits per second: `\"10Gbps\"`, `\"400Mbps\"` or an integer."
);
unit_value!(
    Bytes,
    crate::units::parse_bytes,
    crate::units::check_bytes,
    "size",
    "bytes",
    "A size in bytes: `\"9000B\"`, `\"64KiB\"` or an integer."
);
