//! Model settings: the combinations the server offers, and the owner's choice among them.

use serde::{Deserialize, Serialize};

/// One offered model and the reasoning efforts it takes (`none` when it takes none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OfferedModel {
    pub model: String,
    pub reasoning_efforts: Vec<String>,
}

/// What the server offers for chat and for memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offered {
    pub chat: Vec<OfferedModel>,
    pub memory: Vec<OfferedModel>,
}

/// The owner's choice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelChoice {
    pub chat_model: String,
    pub chat_reasoning_effort: String,
    pub memory_model: String,
    pub memory_reasoning_effort: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OfferError {
    #[error("the offer lists no {0} model")]
    Empty(&'static str),
    #[error("{0} model `{1}` offers no reasoning effort")]
    NoEfforts(&'static str, String),
}

impl Offered {
    /// The offer when the operator configures none: just the given agent model and effort.
    pub fn only(model: &str, reasoning_effort: Option<&str>) -> Offered {
        let offered = OfferedModel {
            model: model.to_owned(),
            reasoning_efforts: vec![reasoning_effort.unwrap_or("none").to_owned()],
        };
        Offered {
            chat: vec![offered.clone()],
            memory: vec![offered],
        }
    }

    /// What applies: the stored choice while the offer still includes it, else the default.
    pub fn effective(&self, stored: Option<ModelChoice>) -> ModelChoice {
        stored
            .filter(|choice| self.refuse(choice).is_none())
            .unwrap_or_else(|| self.default_choice())
    }

    pub fn check(&self) -> Result<(), OfferError> {
        for (kind, models) in [("chat", &self.chat), ("memory", &self.memory)] {
            let first = models.first().ok_or(OfferError::Empty(kind))?;
            if let Some(model) = std::iter::once(first)
                .chain(models.iter())
                .find(|m| m.reasoning_efforts.is_empty())
            {
                return Err(OfferError::NoEfforts(kind, model.model.clone()));
            }
        }
        Ok(())
    }

    /// The choice before the owner makes one: the first offered model and effort of each kind.
    pub fn default_choice(&self) -> ModelChoice {
        let first = |models: &[OfferedModel]| {
            models
                .first()
                .map(|m| {
                    (
                        m.model.clone(),
                        m.reasoning_efforts.first().cloned().unwrap_or_default(),
                    )
                })
                .unwrap_or_default()
        };
        let (chat_model, chat_reasoning_effort) = first(&self.chat);
        let (memory_model, memory_reasoning_effort) = first(&self.memory);
        ModelChoice {
            chat_model,
            chat_reasoning_effort,
            memory_model,
            memory_reasoning_effort,
        }
    }

    /// The first field of `choice` outside the offer, if any.
    pub fn refuse(&self, choice: &ModelChoice) -> Option<&'static str> {
        let pick = |models: &[OfferedModel], model: &str, effort: &str, model_field, effort_field| match models
            .iter()
            .find(|m| m.model == model)
        {
            None => Some(model_field),
            Some(m) if !m.reasoning_efforts.iter().any(|e| e == effort) => Some(effort_field),
            Some(_) => None,
        };
        pick(
            &self.chat,
            &choice.chat_model,
            &choice.chat_reasoning_effort,
            "chat_model",
            "chat_reasoning_effort",
        )
        .or_else(|| {
            pick(
                &self.memory,
                &choice.memory_model,
                &choice.memory_reasoning_effort,
                "memory_model",
                "memory_reasoning_effort",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_must_be_offered_combinations() {
        let offered = Offered {
            chat: vec![OfferedModel {
                model: "gpt-a".into(),
                reasoning_efforts: vec!["low".into(), "high".into()],
            }],
            memory: vec![OfferedModel {
                model: "gpt-mini".into(),
                reasoning_efforts: vec!["none".into()],
            }],
        };
        let choice = offered.default_choice();
        assert_eq!(
            (choice.chat_model.as_str(), choice.chat_reasoning_effort.as_str()),
            ("gpt-a", "low")
        );
        assert_eq!(offered.refuse(&choice), None);
        let mut wrong = choice.clone();
        wrong.chat_reasoning_effort = "medium".into();
        assert_eq!(offered.refuse(&wrong), Some("chat_reasoning_effort"));
        let mut wrong = choice;
        wrong.memory_model = "gpt-a".into();
        assert_eq!(offered.refuse(&wrong), Some("memory_model"));
        assert_eq!(
            Offered {
                chat: vec![],
                memory: vec![]
            }
            .check(),
            Err(OfferError::Empty("chat"))
        );
        assert!(Offered::only("scripted-1", None).check().is_ok());
        let stale = ModelChoice {
            chat_model: "gone".into(),
            ..offered.default_choice()
        };
        assert_eq!(
            offered.effective(Some(stale)),
            offered.default_choice(),
            "a withdrawn model falls back"
        );
    }
}
