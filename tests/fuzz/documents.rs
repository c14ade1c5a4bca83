//! Files an operator or a bootstrap tool writes and a role reads at start: mail credential
//! documents and the accounts manifest. Mistakes here must be named without echoing a secret.

use domain::manifest::{AccountIds, Manifest};
use mail_mcp::document::{CredentialDocument, MailScope};
use proptest::prelude::*;

use crate::{bounded, inputs, property, serial};

const SECRET: &str = "SECRET-7f3a9c";
const TOKEN: &str = "TOKEN-1e8b2d";

fn credential_corpus() -> Vec<Vec<u8>> {
    [MailScope::Read, MailScope::Write, MailScope::Send]
        .iter()
        .flat_map(|scope| {
            let url = scope.url();
            [
                format!(r#"{{"client_id":"id.apps.example","client_secret":"{SECRET}","refresh_token":"{TOKEN}","scope":"{url}"}}"#),
                format!(r#"{{"client_id":"id","client_secret":"{SECRET}","refresh_token":"{TOKEN}","scope":" {url} ","account_id":"personal"}}"#),
            ]
        })
        .map(String::into_bytes)
        .collect()
}

fn manifest_corpus() -> Vec<Vec<u8>> {
    vec![
        br#"{"version": 1, "default_account": "personal", "accounts": [
            {"account_id": "personal", "read_credential_file": "/etc/steward/mail/personal/read.json",
             "write_credential_file": "/etc/steward/mail/personal/write.json",
             "send_credential_file": "/etc/steward/mail/personal/send.json"},
            {"account_id": "work-2", "read_credential_file": "r", "write_credential_file": "w",
             "send_credential_file": "s"}]}"#
            .to_vec(),
    ]
}

#[test]
fn the_corpus_is_accepted() {
    let _serial = serial();
    let scopes = [MailScope::Read, MailScope::Write, MailScope::Send];
    for (index, bytes) in credential_corpus().iter().enumerate() {
        let scope = scopes[index / 2];
        let document = CredentialDocument::parse(bytes, scope, Some("personal")).expect("a good document");
        assert_eq!(document.refresh_token(), TOKEN);
    }
    let manifest = Manifest::parse(&manifest_corpus()[0]).expect("a good manifest");
    assert_eq!(manifest.accounts.len(), 2);
}

#[test]
fn a_credential_document_is_checked_or_refused_without_echoing_a_secret() {
    let scope = prop::sample::select(vec![MailScope::Read, MailScope::Write, MailScope::Send]);
    let account = prop::option::of(prop::sample::select(vec!["personal", "work"]));
    property(
        file!(),
        (inputs(credential_corpus()), scope, account),
        |(bytes, scope, account)| {
            match bounded(bytes.len(), || CredentialDocument::parse(&bytes, scope, account)) {
                Ok(document) => {
                    prop_assert_eq!(document.scope, scope);
                    prop_assert!(!document.client_id.trim().is_empty());
                    prop_assert!(!document.client_secret().trim().is_empty());
                    prop_assert!(!document.refresh_token().trim().is_empty());
                    if let (Some(expected), Some(tagged)) = (account, document.account_id.as_deref()) {
                        prop_assert_eq!(expected, tagged);
                    }
                    let shown = format!("{document:?}");
                    prop_assert!(
                        !shown.contains(document.client_secret()) && !shown.contains(document.refresh_token())
                    );
                }
                Err(error) => {
                    let message = error.to_string();
                    prop_assert!(
                        !message.contains("SECRET-") && !message.contains("TOKEN-"),
                        "{}",
                        message
                    );
                }
            }
            Ok(())
        },
    );
}

#[test]
fn a_manifest_is_consistent_or_refused() {
    property(file!(), inputs(manifest_corpus()), |bytes| {
        let parsed = bounded(bytes.len(), || (Manifest::parse(&bytes), AccountIds::parse(&bytes)));
        match parsed {
            (Ok(manifest), Ok(ids)) => {
                prop_assert_eq!(&manifest.default_account, &ids.default_account);
                prop_assert!(ids.accounts.contains(&ids.default_account));
                let mut unique = ids.accounts.clone();
                unique.sort();
                unique.dedup();
                prop_assert_eq!(unique.len(), ids.accounts.len());
                prop_assert!(ids.accounts.iter().all(|id| domain::manifest::valid_account_id(id)));
            }
            (Err(manifest), Err(ids)) => prop_assert_eq!(manifest, ids),
            (manifest, ids) => prop_assert!(false, "the two readings disagree: {:?} / {:?}", manifest, ids),
        }
        Ok(())
    });
}
