//! A DNS server on 127.0.0.1 (UDP) answering from records a test (or the demo) sets: TXT
//! records (DKIM keys), A and AAAA records (one-click hosts), and names that fail with
//! SERVFAIL. Messages are read and written with `hickory-proto`, the wire format the
//! resolvers under test speak; names are compared lowercased, without the trailing dot.
//!
//! An address record may be a sequence: each A lookup of the name takes the next answer (the
//! last one repeats; an AAAA lookup reads the current one), which is how a test plays a
//! rebinding resolver. Every lookup is counted.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, TXT};
use hickory_proto::rr::{RData, Record, RecordType};
use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

#[derive(Debug, Default)]
struct Records {
    txt: HashMap<String, Vec<String>>,
    addresses: HashMap<String, Vec<Vec<IpAddr>>>,
    failing: HashSet<String>,
    lookups: HashMap<String, usize>,
}

/// The server; dropping it stops it.
#[derive(Debug)]
pub struct DnsServer {
    pub address: SocketAddr,
    records: Arc<Mutex<Records>>,
    task: JoinHandle<()>,
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl DnsServer {
    /// Serves on 127.0.0.1 at a port the system picks.
    pub async fn start() -> DnsServer {
        DnsServer::bind("127.0.0.1:0".parse().expect("an address")).await
    }

    /// Serves on `address`.
    pub async fn bind(address: SocketAddr) -> DnsServer {
        let socket = UdpSocket::bind(address).await.expect("bind the DNS server");
        let address = socket.local_addr().expect("the DNS server's address");
        let records = Arc::new(Mutex::new(Records::default()));
        let task = tokio::spawn(serve(socket, Arc::clone(&records)));
        DnsServer { address, records, task }
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().expect("the DNS records")
    }

    /// Sets `name`'s TXT record to `value` (replacing any other).
    pub fn set_txt(&self, name: &str, value: &str) {
        self.records().txt.insert(key(name), vec![value.to_owned()]);
    }

    /// Removes `name`'s TXT records.
    pub fn remove_txt(&self, name: &str) {
        self.records().txt.remove(&key(name));
    }

    /// Sets `name`'s addresses (answered as A and AAAA records).
    pub fn set_addresses(&self, name: &str, addresses: &[IpAddr]) {
        self.records().addresses.insert(key(name), vec![addresses.to_vec()]);
    }

    /// Answers the lookups of `name` with `answers` in turn, the last repeating.
    pub fn set_address_sequence(&self, name: &str, answers: &[&[IpAddr]]) {
        let answers = answers.iter().map(|addresses| addresses.to_vec()).collect();
        self.records().addresses.insert(key(name), answers);
    }

    /// Lookups of `name` fail with SERVFAIL (a failure that may pass).
    pub fn fail(&self, name: &str) {
        self.records().failing.insert(key(name));
    }

    /// Lookups of `name` succeed again.
    pub fn heal(&self, name: &str) {
        self.records().failing.remove(&key(name));
    }

    /// How many queries for `name` arrived (any type).
    pub fn lookups(&self, name: &str) -> usize {
        self.records().lookups.get(&key(name)).copied().unwrap_or(0)
    }
}

async fn serve(socket: UdpSocket, records: Arc<Mutex<Records>>) {
    let mut buffer = vec![0_u8; 4096];
    loop {
        let Ok((length, peer)) = socket.recv_from(&mut buffer).await else {
            continue;
        };
        let Ok(query) = Message::from_vec(&buffer[..length]) else {
            continue;
        };
        let answer = {
            let mut records = records.lock().expect("the DNS records");
            answer(&query, &mut records)
        };
        if let Ok(bytes) = answer.to_vec() {
            let _ = socket.send_to(&bytes, peer).await;
        }
    }
}

fn answer(query: &Message, records: &mut Records) -> Message {
    let mut response = Message::response(query.metadata.id, OpCode::Query);
    response.metadata.message_type = MessageType::Response;
    response.metadata.recursion_desired = query.metadata.recursion_desired;
    response.metadata.recursion_available = true;
    response.metadata.authoritative = true;
    let Some(question) = query.queries.first() else {
        response.metadata.response_code = ResponseCode::FormErr;
        return response;
    };
    response.add_query(question.clone());
    let name = key(&question.name().to_ascii());
    *records.lookups.entry(name.clone()).or_default() += 1;
    if records.failing.contains(&name) {
        response.metadata.response_code = ResponseCode::ServFail;
        return response;
    }
    let known = records.txt.contains_key(&name) || records.addresses.contains_key(&name);
    if !known {
        response.metadata.response_code = ResponseCode::NXDomain;
        return response;
    }
    let owner = question.name().clone();
    match question.query_type() {
        RecordType::TXT => {
            for value in records.txt.get(&name).into_iter().flatten() {
                // Character strings of at most 255 bytes each (RFC 1035 §3.3.14).
                let pieces = value
                    .as_bytes()
                    .chunks(255)
                    .map(|piece| String::from_utf8_lossy(piece).into_owned())
                    .collect();
                response.add_answer(Record::from_rdata(owner.clone(), 0, RData::TXT(TXT::new(pieces))));
            }
        }
        kind @ (RecordType::A | RecordType::AAAA) => {
            // An A query moves a sequence on; an AAAA query (asked beside it) reads the same step.
            let addresses = match records.addresses.get_mut(&name) {
                Some(answers) if answers.len() > 1 && kind == RecordType::A => answers.remove(0),
                Some(answers) => answers.first().cloned().unwrap_or_default(),
                None => Vec::new(),
            };
            for address in addresses {
                let data = match (kind, address) {
                    (RecordType::A, IpAddr::V4(v4)) => RData::A(A(v4)),
                    (RecordType::AAAA, IpAddr::V6(v6)) => RData::AAAA(AAAA(v6)),
                    _ => continue,
                };
                response.add_answer(Record::from_rdata(owner.clone(), 0, data));
            }
        }
        _ => {}
    }
    response
}
