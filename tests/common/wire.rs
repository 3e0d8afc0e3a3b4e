//! A request's progress as the server shows it on the wire, for tests that write requests by hand.

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The interim answer a server sends to a request that asked for it (`Expect: 100-continue`)
/// when it starts reading that request's body.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Waits for the `100 Continue` of a request sent with `Expect: 100-continue`: the server has
/// started reading its body, so whatever it holds while reading (a place, upload buffers) is
/// held. Seen rather than guessed with a sleep. What follows on `stream` is the final answer.
pub(crate) async fn body_being_read(stream: &mut TcpStream) {
    let mut interim = [0; CONTINUE.len()];
    tokio::time::timeout(Duration::from_secs(30), stream.read_exact(&mut interim))
        .await
        .expect("the server never started reading the body (no 100 Continue within 30 s)")
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&interim),
        String::from_utf8_lossy(CONTINUE),
        "not an interim 100 Continue"
    );
}
