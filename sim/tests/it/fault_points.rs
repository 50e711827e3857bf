//! The engine's fault points at its seams (the RPC client, the durable store's client), each
//! fired on purpose in a two-node simulation: the point does what its doc says, hits its
//! coverage mark, and the code above it stays correct (a retried append is applied once; a
//! request answered late took effect although its caller saw a timeout); and the durable
//! store's client across a crash of the store between an append and its sync.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sluice_engine::buggify::{self, FaultPoint, FaultPolicy};
use sluice_engine::cover::{self, CoverageSink, Mark};
use sluice_engine::rpc::{RpcClient, RpcError, bind, serve};
use sluice_engine::storage::remote::{RemoteStorage, StorageCall, apply};
use sluice_engine::storage::{MemoryStorage, Storage, StorageError, append_durably, read_all};

const SERVER: &str = "10.0.9.1:7000";

/// Fires `point` the first `times` times it is asked, then never.
struct FirstTimes(FaultPoint, Cell<u32>);

impl FaultPolicy for FirstTimes {
    fn fires(&self, point: FaultPoint) -> bool {
        let left = self.1.get();
        let fire = point == self.0 && left > 0;
        self.1.set(left - u32::from(fire));
        fire
    }
}

#[derive(Default)]
struct Hits(RefCell<Vec<Mark>>);

impl CoverageSink for Hits {
    fn hit(&self, mark: Mark) {
        self.0.borrow_mut().push(mark);
    }
}

impl Hits {
    fn count(&self, mark: Mark) -> usize {
        self.0.borrow().iter().filter(|hit| **hit == mark).count()
    }
}

fn server() -> SocketAddr {
    SERVER.parse().expect("a socket address")
}

/// A storage node serving `disk` at [`SERVER`], and a client node.
fn store_and_client(disk: &MemoryStorage) -> madsim::runtime::NodeHandle {
    let handle = madsim::runtime::Handle::current();
    let served = Arc::new(disk.clone());
    handle
        .create_node()
        .name("store")
        .ip(server().ip())
        .init(move || {
            let served = Arc::clone(&served);
            async move {
                let endpoint = bind(server()).await.expect("the store binds");
                serve(&endpoint, move |call: StorageCall| {
                    let served = Arc::clone(&served);
                    async move { apply(served.as_ref(), call.operation).await }
                });
                std::future::pending::<()>().await;
            }
        })
        .build();
    handle.create_node().name("client").ip("10.0.9.2".parse().unwrap()).build()
}

#[madsim::test]
async fn an_append_whose_reply_was_lost_is_retried_and_applied_once() {
    let disk = MemoryStorage::new();
    let client = store_and_client(&disk);
    let hits = Rc::new(Hits::default());
    let _policy = buggify::install(Rc::new(FirstTimes(FaultPoint::DurableAppendReplyLost, Cell::new(2))));
    let _sink = cover::install(Rc::clone(&hits) as Rc<dyn CoverageSink>);
    client
        .spawn(async move {
            madsim::time::sleep(Duration::from_millis(10)).await;
            let storage = RemoteStorage::new(server());
            storage.append("log", b"first ").await.expect("the first append");
            storage.append("log", b"second").await.expect("the second append");
        })
        .await
        .unwrap();
    assert_eq!(read_all(&disk, "log").await.unwrap(), b"first second", "each append applied once");
    assert_eq!(hits.count(Mark::BuggifyDurableAppendReplyLost), 2, "the point fired on both appends");
    assert_eq!(hits.count(Mark::RetriedAppendFoundApplied), 2, "and the store recognized both retries");
}

/// The durable store crashed between an append and its sync: the sync must not make the file
/// without the append durable as if it were whole. `append_durably` says so, and the JobMaster's
/// log (which retries it) writes the record again.
#[madsim::test]
async fn a_store_that_lost_an_append_in_a_crash_refuses_to_sync_through_it() {
    let disk = MemoryStorage::new();
    let client = store_and_client(&disk);
    let crashed = disk.clone();
    let (refused, appended_again) = client
        .spawn(async move {
            madsim::time::sleep(Duration::from_millis(10)).await;
            let storage = RemoteStorage::new(server());
            append_durably(&storage, "log", b"first ").await.expect("the first record");
            storage.append_at("log", 6, b"second").await.expect("the second append");
            crashed.crash(); // what a killed store's disk does: its pending bytes are gone
            let refused = storage.sync_through("log", 12).await;
            (refused, append_durably(&storage, "log", b"second").await)
        })
        .await
        .unwrap();
    assert_eq!(refused, Err(StorageError::LengthChanged { path: "log".into(), expected: 12, length: 6 }));
    assert_eq!(appended_again, Ok(()));
    disk.crash();
    assert_eq!(read_all(&disk, "log").await.unwrap(), b"first second", "both records durable, once each");
}

/// A request the server counts.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Count;
sluice_engine::rpc_request!(Count => u32);

#[madsim::test]
async fn a_reply_past_the_callers_timeout_is_a_timeout_for_a_request_that_took_effect() {
    let handle = madsim::runtime::Handle::current();
    let counted = Arc::new(AtomicU32::new(0));
    let served = Arc::clone(&counted);
    handle
        .create_node()
        .name("server")
        .ip(server().ip())
        .init(move || {
            let served = Arc::clone(&served);
            async move {
                let endpoint = bind(server()).await.expect("the server binds");
                serve(&endpoint, move |_: Count| {
                    let count = served.fetch_add(1, Ordering::SeqCst) + 1;
                    async move { count }
                });
                std::future::pending::<()>().await;
            }
        })
        .build();
    let client = handle.create_node().name("client").ip("10.0.9.2".parse().unwrap()).build();
    let hits = Rc::new(Hits::default());
    let _policy = buggify::install(Rc::new(FirstTimes(FaultPoint::RpcReplyLate, Cell::new(1))));
    let _sink = cover::install(Rc::clone(&hits) as Rc<dyn CoverageSink>);
    let (late, waited, on_time) = client
        .spawn(async move {
            madsim::time::sleep(Duration::from_millis(10)).await;
            let client = RpcClient::bind_ephemeral().await.expect("the client binds");
            let timeout = Duration::from_millis(300);
            let started = madsim::time::Instant::now();
            let late = client.call(server(), Count, timeout).await;
            let waited = started.elapsed();
            (late, waited, client.call(server(), Count, timeout).await)
        })
        .await
        .unwrap();
    assert!(matches!(late, Err(RpcError::Timeout { .. })), "the caller saw a timeout: {late:?}");
    assert!(waited >= Duration::from_millis(300), "after its whole timeout: {waited:?}");
    assert_eq!(on_time, Ok(2), "the late request took effect: the next one is the server's second");
    assert_eq!(counted.load(Ordering::SeqCst), 2);
    assert_eq!(hits.count(Mark::BuggifyRpcReplyLate), 1);
}
