//! Closed sets of names: the states, kinds and signals the store keeps as text and the wire
//! sends as snake_case strings. Each is one enum, defined once with [`names!`], that parses its
//! stored text or refuses it: an unknown stored value is corruption, never a silent default.

/// A name that is none of its type's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a known {what}")]
pub struct UnknownName {
    /// What the name was meant to be (`email operation state`).
    pub what: &'static str,
    pub text: String,
}

/// Declares an enum of names: serialized (and stored) as the given snake_case text, with
/// `ALL`, `as_str`, `parse` and `TryFrom<String>`/`TryFrom<&str>` refusing any other text.
macro_rules! names {
    ($(#[$meta:meta])* $name:ident ($what:literal) { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored (and serialized) name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|value| value.as_str() == text)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = $crate::names::UnknownName;

            fn try_from(text: &str) -> Result<$name, Self::Error> {
                $name::parse(text).ok_or_else(|| $crate::names::UnknownName { what: $what, text: text.to_owned() })
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::names::UnknownName;

            fn try_from(text: String) -> Result<$name, Self::Error> {
                $name::try_from(text.as_str())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use names;

#[cfg(test)]
mod tests {
    names! {
        /// A test set.
        Colour ("colour") { Red => "red", DarkBlue => "dark_blue" }
    }

    #[test]
    fn a_name_round_trips_and_anything_else_is_refused_with_what_it_was_meant_to_be() {
        for colour in Colour::ALL {
            assert_eq!(Colour::try_from(colour.as_str()), Ok(*colour));
            assert_eq!(serde_json::to_value(colour).expect("json"), colour.as_str());
            assert_eq!(colour.to_string(), colour.as_str());
        }
        let refused = Colour::try_from("Red".to_owned()).expect_err("case matters");
        assert_eq!(refused.to_string(), "`Red` is not a known colour");
    }
}
