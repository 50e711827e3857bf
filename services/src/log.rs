//! The replayable log server: answers `DescribeTopic` and `FetchRecords` from fixed contents.

use std::net::SocketAddr;
use std::sync::Arc;

use sluice_catalog::ExternalInput;
use sluice_engine::connectors::log::{DescribeTopic, FetchRecords, FetchedRecords, TopicDescription};
use sluice_engine::rpc::serve;

/// Serves `input` at `address` until the node is killed.
pub async fn run_log_server(address: SocketAddr, input: Arc<ExternalInput>) {
    let endpoint = sluice_engine::rpc::bind(address)
        .await
        .unwrap_or_else(|error| panic!("internal: log cannot bind {address}: {error}"));
    let topics = Arc::clone(&input);
    serve(&endpoint, move |request: DescribeTopic| {
        let answer = match topics.topics.get(&request.topic) {
            Some(partitions) => {
                Ok(TopicDescription { end_offsets: partitions.iter().map(|p| p.len() as u64).collect() })
            }
            None => Err(format!("no topic `{}`", request.topic)),
        };
        async move { answer }
    });
    let topics = Arc::clone(&input);
    serve(&endpoint, move |request: FetchRecords| {
        let answer = fetch(&topics, &request);
        async move { answer }
    });
    sluice_engine::rpc::serve_health(&endpoint, sluice_engine::connectors::LOG_SYSTEM);
    std::future::pending::<()>().await;
}

fn fetch(input: &ExternalInput, request: &FetchRecords) -> Result<FetchedRecords, String> {
    let partitions = input.topics.get(&request.topic).ok_or_else(|| format!("no topic `{}`", request.topic))?;
    let partition = partitions
        .get(request.partition as usize)
        .ok_or_else(|| format!("topic `{}` has no partition {}", request.topic, request.partition))?;
    let start = usize::try_from(request.offset).unwrap_or(usize::MAX).min(partition.len());
    let end = start.saturating_add(request.max_records as usize).min(partition.len());
    assert!(start <= end, "log invariant: a fetch of `{}` reads forward from offset {start}", request.topic);
    assert!(
        end - start <= request.max_records as usize,
        "log invariant: a fetch of `{}` answers at most the {} records asked for",
        request.topic,
        request.max_records
    );
    Ok(FetchedRecords { records: partition[start..end].to_vec() })
}
