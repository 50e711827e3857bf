//! [`BoxFuture`]: the boxed, sendable future that erased asynchronous hooks return (sources,
//! sinks, storage), so that they can live behind `dyn` traits.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
