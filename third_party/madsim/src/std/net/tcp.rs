//! Tag-matching API over TCP.

use crate::task;
use bytes::{Buf, Bytes};
use futures_util::StreamExt;
use std::{
    collections::{hash_map::Entry, HashMap},
    io::{self, IoSlice},
    net::SocketAddr,
    sync::{Arc, Mutex, RwLock},
};
use tokio::{
    io::AsyncWriteExt,
    net::{lookup_host, TcpListener, TcpStream, ToSocketAddrs},
    sync::{mpsc, oneshot},
};
use tokio_util::codec::{length_delimited::LengthDelimitedCodec, FramedRead};
use tracing::*;

/// The largest message a connection carries (Sluice patch).
pub const MAX_FRAME: usize = 64 << 20;

/// An endpoint.
#[derive(Clone)]
pub struct Endpoint {
    addr: SocketAddr,
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    sender: RwLock<Sender>,
    mailbox: Mutex<Mailbox>,
    tasks: Mutex<Vec<task::JoinHandle<()>>>,
}

type Sender = HashMap<SocketAddr, mpsc::Sender<SendMsg>>;

/// Sluice patch: a message owns its bytes. It used to borrow the caller's buffers (made
/// `'static` by a transmute) on the promise that the caller waits until they are written; but a
/// caller's future can be dropped while it waits (a `call_timeout` that expires, a cancelled
/// task), after which the sending task wrote freed memory: a frame of garbage, which the peer
/// could not decode ("malformed request"), or worse.
struct SendMsg {
    tag: u64,
    data: Vec<u8>,
    done: oneshot::Sender<()>,
}

impl Endpoint {
    /// Creates an [`Endpoint`] from the given address.
    pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let ep = Endpoint {
            addr,
            inner: Default::default(),
        };
        trace!("new endpoint: {addr}");

        let inner = Arc::downgrade(&ep.inner);
        let acceptor = task::spawn(async move {
            loop {
                // Sluice patch: a failed accept (a peer that reset at once, no file
                // descriptors left) is that connection's problem, never the listener's.
                let Ok((stream, remote)) = listener.accept().await else {
                    continue;
                };
                if let Some(inner) = inner.upgrade() {
                    // Sluice patch: a peer that dies during the handshake costs only its own
                    // connection (this used to panic the acceptor, which stopped serving).
                    let _ = inner.setup_connection(addr, Some(remote), None, stream).await;
                } else {
                    return;
                }
            }
        });
        ep.inner.tasks.lock().unwrap().push(acceptor);
        Ok(ep)
    }
}

impl Inner {
    async fn setup_connection(
        self: &Arc<Self>,
        addr: SocketAddr,
        remote: Option<SocketAddr>,
        peer: Option<(SocketAddr, mpsc::Receiver<SendMsg>, mpsc::Sender<SendMsg>)>,
        stream: TcpStream,
    ) -> io::Result<()> {
        stream.set_nodelay(true)?;
        let (reader, writer) = stream.into_split();
        let mut writer = tokio::io::BufWriter::new(writer);
        // Sluice patch: frames up to MAX_FRAME (the codec's default, 8 MiB, cut larger
        // messages off by closing the connection, which the caller saw only as a timeout).
        let codec = LengthDelimitedCodec::builder().max_frame_length(MAX_FRAME).new_codec();
        let mut reader = FramedRead::new(reader, codec);
        let (peer, mut send_rx, own_tx) = if let Some((peer, send_rx, own_tx)) = peer {
            // send local address
            let addr_str = addr.to_string();
            writer.write_u32(addr_str.len() as _).await?;
            writer.write_all(addr_str.as_bytes()).await?;
            writer.flush().await?;
            (peer, send_rx, own_tx)
        } else {
            // receive real peer address
            let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
            let data = reader
                .next()
                .await
                .ok_or_else(|| invalid("connection closed before the peer said who it is"))??;
            let peer = std::str::from_utf8(&data)
                .ok()
                .and_then(|text| text.parse::<SocketAddr>().ok())
                .ok_or_else(|| invalid("the peer's address is not an address"))?;
            // Sluice patch: a peer bound to 0.0.0.0 says so; it is known by the address its
            // connection comes from, so that two such peers on two machines never share a name.
            let peer = match remote {
                Some(remote) if peer.ip().is_unspecified() => SocketAddr::new(remote.ip(), peer.port()),
                _ => peer,
            };
            // register sender
            // Sluice patch: when two endpoints connect to each other at once, each keeps
            // sending on the connection it already uses, and both connections stay open (each
            // is held by its own receiving task). Replacing the entry used to drop the other
            // connection's sender, which closed it under the calls waiting for answers on it.
            let (send_tx, send_rx) = mpsc::channel(10);
            match self.sender.write().unwrap().entry(peer) {
                Entry::Occupied(e) if !e.get().is_closed() => warn!("duplicate connection: {addr} -> {peer}"),
                Entry::Occupied(mut e) => {
                    e.insert(send_tx.clone());
                }
                Entry::Vacant(e) => {
                    e.insert(send_tx.clone());
                }
            }
            (peer, send_rx, send_tx)
        };
        trace!("setup connection: {addr} -> {peer}");

        let sender_task = task::spawn(async move {
            while let Some(SendMsg { tag, data, done }) = send_rx.recv().await {
                // Sluice patch: a write to a dead peer ends this connection (the caller's
                // `done` is dropped, so its send fails) instead of panicking the task.
                let len = 8 + data.len();
                if writer.write_u32(len as _).await.is_err()
                    || writer.write_u64(tag).await.is_err()
                    || writer.write_all(&data).await.is_err()
                {
                    return;
                }
                if writer.flush().await.is_err() {
                    return;
                }
                let _ = done.send(());
            }
        });

        let inner = Arc::downgrade(self);
        let _recver_task = task::spawn(async move {
            // Sluice patch: this connection's sender lives as long as the connection.
            let own_tx = own_tx;
            while let Some(frame) = reader.next().await {
                let mut frame = match frame {
                    Ok(frame) if frame.len() >= 8 => frame.freeze(),
                    _ => break,
                };
                let tag = frame.get_u64();
                debug!(?addr, ?peer, tag, len = frame.len(), "recv");
                if let Some(inner) = inner.upgrade() {
                    inner.mailbox.lock().unwrap().deliver(RecvMsg {
                        tag,
                        data: frame,
                        from: peer,
                    });
                } else {
                    break;
                }
            }
            // NOTE: now the tcp connection is closed by remote.
            //       We need to abort the sender task to close the connection cleanly.
            sender_task.abort();
            debug!(?addr, ?peer, "close connection");
            // Sluice patch: forget this connection only, never a newer one to the same peer.
            if let Some(inner) = inner.upgrade() {
                let mut senders = inner.sender.write().unwrap();
                if senders.get(&peer).is_some_and(|current| current.same_channel(&own_tx)) {
                    senders.remove(&peer);
                }
            }
        });

        // self.tasks
        //     .lock()
        //     .unwrap()
        //     .extend([sender_task, recver_task]);
        Ok(())
    }
}

impl Endpoint {
    /// Get a sender to the remote endpoint `addr`. Setup connection if it doesn't exist.
    async fn get_or_connect(&self, addr: SocketAddr) -> io::Result<mpsc::Sender<SendMsg>> {
        // return sender if it exists (Sluice patch: and its connection is still alive)
        if let Some(sender) = self.inner.sender.read().unwrap().get(&addr) {
            if !sender.is_closed() {
                return Ok(sender.clone());
            }
        }
        // create a new channel and register sender
        let (sender, recver) = match self.inner.sender.write().unwrap().entry(addr) {
            Entry::Occupied(e) if !e.get().is_closed() => return Ok(e.get().clone()),
            Entry::Occupied(mut e) => {
                let (tx, rx) = mpsc::channel(10);
                e.insert(tx.clone());
                (tx, rx)
            }
            Entry::Vacant(e) => {
                let (tx, rx) = mpsc::channel(10);
                e.insert(tx.clone());
                (tx, rx)
            }
        };
        // connect to the remote endpoint
        // trace!("{} try sending to {} but has not connected, start to connect actively", self.addr, addr);
        // Sluice patch: a peer that is down (refused, unreachable) is an error for this call,
        // and forgets the half-made connection so that the next call tries again; this used to
        // panic and leave a dead sender behind, so a restarted peer was never reached again.
        let connected = match TcpStream::connect(addr).await {
            Ok(stream) => {
                self.inner
                    .setup_connection(self.addr, None, Some((addr, recver, sender.clone())), stream)
                    .await
            }
            Err(error) => Err(error),
        };
        if let Err(error) = connected {
            let mut senders = self.inner.sender.write().unwrap();
            if senders.get(&addr).is_some_and(|current| current.same_channel(&sender)) {
                senders.remove(&addr);
            }
            return Err(error);
        }
        Ok(sender)
    }

    /// Returns the local socket address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }

    /// Sends data with tag on the socket to the given address.
    ///
    /// # Example
    /// ```ignore
    /// # use madsim_std as madsim;
    /// use madsim::{Runtime, net::Endpoint};
    ///
    /// Runtime::new().block_on(async {
    ///     let net = Endpoint::bind("127.0.0.1:0").await.unwrap();
    ///     net.send_to("127.0.0.1:4242", 0, &[0; 10]).await.expect("couldn't send data");
    /// });
    /// ```
    pub async fn send_to(&self, dst: impl ToSocketAddrs, tag: u64, data: &[u8]) -> io::Result<()> {
        self.send_to_vectored(dst, tag, &mut [IoSlice::new(data)])
            .await
    }

    /// Like [`send_to`], except that it writes from a slice of buffers.
    ///
    /// [`send_to`]: Endpoint::send_to
    pub async fn send_to_vectored(
        &self,
        dst: impl ToSocketAddrs,
        tag: u64,
        bufs: &mut [IoSlice<'_>],
    ) -> io::Result<()> {
        let len = 8 + bufs.iter().map(|s| s.len()).sum::<usize>();
        if len > MAX_FRAME {
            // Sluice patch: refused here, with a reason, rather than by the peer's codec.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a message of {len} bytes is larger than the largest frame, {MAX_FRAME} bytes"),
            ));
        }
        let dst = lookup_host(dst)
            .await?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))?;
        trace!("send: {} -> {}, tag={}", self.addr, dst, tag);
        let sender = self.get_or_connect(dst).await?;
        // Sluice patch: the message owns a copy of its bytes (see `SendMsg`).
        let mut data = Vec::with_capacity(len - 8);
        for buf in bufs.iter() {
            data.extend_from_slice(buf);
        }
        let (done, done_recver) = oneshot::channel();
        let broken = || io::Error::new(io::ErrorKind::BrokenPipe, "the connection to the peer closed");
        if sender.send(SendMsg { tag, data, done }).await.is_err() {
            return Err(broken());
        }
        done_recver.await.map_err(|_| broken())?;
        Ok(())
    }

    /// Receives a single message with given tag on the socket.
    /// On success, returns the number of bytes read and the origin.
    ///
    /// # Example
    /// ```ignore
    /// # use madsim_std as madsim;
    /// use madsim::{Runtime, net::Endpoint};
    ///
    /// Runtime::new().block_on(async {
    ///     let net = Endpoint::bind("127.0.0.1:0").await.unwrap();
    ///     let mut buf = [0; 10];
    ///     let (len, src) = net.recv_from(0, &mut buf).await.expect("couldn't receive data");
    /// });
    /// ```
    pub async fn recv_from(&self, tag: u64, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let (data, from) = self.recv_from_raw(tag).await?;
        let len = buf.len().min(data.len());
        buf[..len].copy_from_slice(&data[..len]);
        Ok((len, from))
    }

    /// Receives a raw message.
    pub(crate) async fn recv_from_raw(&self, tag: u64) -> io::Result<(Bytes, SocketAddr)> {
        let recver = self.inner.mailbox.lock().unwrap().recv(tag);
        let msg = recver.await.unwrap();
        trace!("recv: {} <- {}, tag={}", self.addr, msg.from, msg.tag);
        Ok((msg.data, msg.from))
    }
}

#[derive(Debug)]
struct RecvMsg {
    tag: u64,
    data: Bytes,
    from: SocketAddr,
}

#[derive(Default)]
struct Mailbox {
    registered: Vec<(u64, oneshot::Sender<RecvMsg>)>,
    msgs: Vec<RecvMsg>,
}

impl Mailbox {
    fn deliver(&mut self, msg: RecvMsg) {
        let mut i = 0;
        let mut msg = Some(msg);
        while i < self.registered.len() {
            if matches!(&msg, Some(msg) if msg.tag == self.registered[i].0) {
                // tag match, take and try send
                let (_, sender) = self.registered.swap_remove(i);
                msg = match sender.send(msg.take().unwrap()) {
                    Ok(_) => return,
                    Err(m) => Some(m),
                };
                // failed to send, try next
            } else {
                // tag mismatch, move to next
                i += 1;
            }
        }
        // failed to match awaiting recv, save
        self.msgs.push(msg.unwrap());
    }

    fn recv(&mut self, tag: u64) -> oneshot::Receiver<RecvMsg> {
        let (tx, rx) = oneshot::channel();
        if let Some(idx) = self.msgs.iter().position(|msg| tag == msg.tag) {
            let msg = self.msgs.swap_remove(idx);
            tx.send(msg).ok().unwrap();
        } else {
            self.registered.push((tag, tx));
        }
        rx
    }
}

