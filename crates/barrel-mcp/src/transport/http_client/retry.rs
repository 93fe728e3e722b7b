//! Sending a request again when the server answers 503 or 429: both mean "not accepted, try
//! later" (a load balancer whose shared store blinked, a per-principal cap), so the same
//! request (method, URL, headers and body) goes out again after the server's `Retry-After`, or
//! after an exponential backoff with jitter when it names none, within the bounds of a
//! [`RetryPolicy`].
//!
//! When the bounds are reached the last answer is returned as it came, carrying a [`GaveUp`]
//! extension that says why, and the transport handles it as it would without a policy (a 503
//! ends the connection, a 429 fails the one message), naming the reason.

use std::future::Future;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::header::RETRY_AFTER;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::Full;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::Error;

/// How the Streamable HTTP client transport retries a request the server answered with 503
/// (Service Unavailable) or 429 (Too Many Requests). Other statuses (500, 502, 504, ...) are
/// never retried. Every field has a documented default; `max_retries: 0` turns retrying off.
///
/// The wait is the server's `Retry-After` (delta-seconds or an HTTP-date) when it sends one,
/// else `base_delay` doubled at each retry, with jitter, and never over `max_delay`. A request
/// whose call is cancelled or times out, or whose connection is closed, stops waiting at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How many times one request is sent again. Default 3 (so at most 4 attempts).
    pub max_retries: u32,
    /// The longest single wait. A `Retry-After` over it is not honoured: the request is not
    /// sent again, and fails with an error naming the status and the `Retry-After`.
    /// Default 10 s.
    pub max_delay: Duration,
    /// The first wait when the server names none; it doubles at each retry (with jitter: the
    /// wait is between half and all of it), capped by `max_delay`. Default 250 ms.
    pub base_delay: Duration,
    /// The most time one request may spend from its first attempt to its last: a wait that
    /// would pass it is not taken, and the request fails. Default 30 s.
    pub budget: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            max_delay: Duration::from_secs(10),
            base_delay: Duration::from_millis(250),
            budget: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No retry: a 503 or 429 is handled at once.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }
}

/// The extension on an answer that was not retried (any more): why, for the error it becomes.
#[derive(Debug, Clone)]
pub(super) struct GaveUp(pub(super) String);

/// Why a 503 or 429 answer was not retried, when it is one.
pub(super) fn gave_up<B>(response: &Response<B>) -> Option<&str> {
    response
        .extensions()
        .get::<GaveUp>()
        .map(|gave_up| gave_up.0.as_str())
}

/// Sends `request` with `attempt`, and again after each 503 or 429, as `policy` allows. The
/// waits end at once when `stop` is cancelled (`Err(Closed)`); dropping the future ends them
/// too. An `Err` of `attempt` (no answer) is returned as it is.
pub(super) async fn send<B, F, Fut>(
    policy: &RetryPolicy,
    request: Request<Full<Bytes>>,
    stop: Option<&CancellationToken>,
    mut attempt: F,
) -> Result<Response<B>, Error>
where
    F: FnMut(Request<Full<Bytes>>) -> Fut,
    Fut: Future<Output = Result<Response<B>, Error>>,
{
    let started = Instant::now();
    let (parts, body) = request.into_parts();
    let mut retries = 0;
    loop {
        let mut again = Request::new(body.clone());
        *again.method_mut() = parts.method.clone();
        *again.uri_mut() = parts.uri.clone();
        *again.version_mut() = parts.version;
        *again.headers_mut() = parts.headers.clone();
        let mut response = attempt(again).await?;
        let status = response.status();
        let verdict = decide(
            policy,
            status,
            response.headers(),
            retries,
            started.elapsed(),
            SystemTime::now(),
        );
        let wait = match verdict {
            None => return Ok(response),
            Some(Verdict::GiveUp(why)) => {
                tracing::debug!(%status, attempts = retries + 1, "not retried: {why}");
                response.extensions_mut().insert(GaveUp(why));
                return Ok(response);
            }
            Some(Verdict::Wait(wait)) => wait,
        };
        drop(response);
        retries += 1;
        tracing::debug!(
            %status,
            attempt = retries,
            ?wait,
            "the server is busy; sending the request again"
        );
        match stop {
            Some(stop) => tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = stop.cancelled() => return Err(Error::Closed),
            },
            None => tokio::time::sleep(wait).await,
        }
    }
}

/// What to do with an answer.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Send the request again after this long.
    Wait(Duration),
    /// Do not: the reason.
    GiveUp(String),
}

/// `None` when `status` is not retried at all; else whether the request goes out again, after
/// `retries` retries and `elapsed` since the first attempt.
fn decide(
    policy: &RetryPolicy,
    status: StatusCode,
    headers: &HeaderMap,
    retries: u32,
    elapsed: Duration,
    now: SystemTime,
) -> Option<Verdict> {
    if status != StatusCode::SERVICE_UNAVAILABLE && status != StatusCode::TOO_MANY_REQUESTS {
        return None;
    }
    let named = retry_after(headers, now);
    if let Some(named) = named
        && named > policy.max_delay
    {
        return Some(Verdict::GiveUp(format!(
            "not retried: Retry-After {} s is over RetryPolicy::max_delay ({:?})",
            named.as_secs(),
            policy.max_delay
        )));
    }
    let attempts = retries.saturating_add(1);
    if retries >= policy.max_retries {
        return Some(Verdict::GiveUp(format!(
            "given up after {attempts} attempt(s) (RetryPolicy::max_retries is {})",
            policy.max_retries
        )));
    }
    let wait = named.unwrap_or_else(|| backoff(policy, retries));
    if elapsed.saturating_add(wait) > policy.budget {
        return Some(Verdict::GiveUp(format!(
            "given up after {attempts} attempt(s) in {elapsed:?}: waiting {wait:?} more would \
             pass RetryPolicy::budget ({:?})",
            policy.budget
        )));
    }
    Some(Verdict::Wait(wait))
}

/// The wait before retry number `retries + 1` when the server named none: `base_delay`
/// doubled `retries` times, capped by `max_delay`, then between half and all of that.
fn backoff(policy: &RetryPolicy, retries: u32) -> Duration {
    let factor = 1u32 << retries.min(16);
    let ceiling = policy
        .base_delay
        .saturating_mul(factor)
        .min(policy.max_delay);
    let half = ceiling / 2;
    let spread = u64::try_from((ceiling - half).as_micros()).unwrap_or(u64::MAX);
    let random = u64::from(getrandom::u32().unwrap_or(0));
    let jitter = if spread == 0 {
        0
    } else {
        random % spread.saturating_add(1)
    };
    half + Duration::from_micros(jitter)
}

/// The first `Retry-After` header as a wait from `now`: delta-seconds, or an HTTP-date (a date
/// in the past is no wait). Anything else reads as no header.
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits for a u64: a wait far over any bound.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use http::HeaderValue;

    use super::*;

    fn headers(retry_after: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_str(retry_after).unwrap());
        headers
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(
            retry_after(&headers("7"), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(retry_after(&headers(" 0 "), now), Some(Duration::ZERO));
        let huge = retry_after(&headers("99999999999999999999999"), now);
        assert_eq!(huge, Some(Duration::from_secs(u64::MAX)));
        // Wed, 21 Oct 2015 07:28:00 GMT is `now`; 07:28:30 is 30 s later.
        let later = retry_after(&headers("Wed, 21 Oct 2015 07:28:30 GMT"), now);
        assert_eq!(later, Some(Duration::from_secs(30)));
        let past = retry_after(&headers("Wed, 21 Oct 2015 07:00:00 GMT"), now);
        assert_eq!(past, Some(Duration::ZERO));
        for garbage in ["-1", "1.5", "soon", "", "Wed, 99 Foo 2015"] {
            assert_eq!(retry_after(&headers(garbage), now), None, "{garbage:?}");
        }
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn only_503_and_429_are_retried() {
        let policy = RetryPolicy::default();
        let now = SystemTime::now();
        for status in [500, 502, 504, 404, 400, 401, 200] {
            let status = StatusCode::from_u16(status).unwrap();
            let verdict = decide(&policy, status, &headers("0"), 0, Duration::ZERO, now);
            assert_eq!(verdict, None, "{status}");
        }
        for status in [
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::TOO_MANY_REQUESTS,
        ] {
            let verdict = decide(&policy, status, &headers("2"), 0, Duration::ZERO, now);
            assert_eq!(verdict, Some(Verdict::Wait(Duration::from_secs(2))));
        }
    }

    #[test]
    fn the_bounds_give_up_with_a_reason() {
        let policy = RetryPolicy::default();
        let now = SystemTime::now();
        let busy = StatusCode::SERVICE_UNAVAILABLE;
        let Some(Verdict::GiveUp(why)) =
            decide(&policy, busy, &headers("60"), 0, Duration::ZERO, now)
        else {
            panic!("a Retry-After over max_delay is not honoured");
        };
        assert!(
            why.contains("Retry-After 60 s") && why.contains("max_delay"),
            "{why}"
        );
        let Some(Verdict::GiveUp(why)) =
            decide(&policy, busy, &headers("0"), 3, Duration::ZERO, now)
        else {
            panic!("max_retries");
        };
        assert!(
            why.contains("4 attempt(s)") && why.contains("max_retries"),
            "{why}"
        );
        let late = Duration::from_secs(25);
        let Some(Verdict::GiveUp(why)) = decide(&policy, busy, &headers("6"), 1, late, now) else {
            panic!("budget");
        };
        assert!(why.contains("budget"), "{why}");
        let off = RetryPolicy::none();
        let verdict = decide(&off, busy, &HeaderMap::new(), 0, Duration::ZERO, now);
        assert!(matches!(verdict, Some(Verdict::GiveUp(_))));
    }

    #[test]
    fn backoff_doubles_with_jitter_under_the_cap() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1_000),
            ..RetryPolicy::default()
        };
        for _ in 0..50 {
            for (retries, ceiling) in [(0, 100), (1, 200), (2, 400), (3, 800), (4, 1_000)] {
                let wait = backoff(&policy, retries);
                let ceiling = Duration::from_millis(ceiling);
                assert!(
                    wait >= ceiling / 2 && wait <= ceiling,
                    "{retries}: {wait:?}"
                );
            }
        }
        assert!(backoff(&policy, u32::MAX) <= policy.max_delay);
        let zero = RetryPolicy {
            base_delay: Duration::ZERO,
            ..RetryPolicy::default()
        };
        assert_eq!(backoff(&zero, 3), Duration::ZERO);
    }

    fn answer(status: u16, retry_after: Option<&str>) -> Response<()> {
        let mut response = Response::builder().status(status);
        if let Some(value) = retry_after {
            response = response.header(RETRY_AFTER, value);
        }
        response.body(()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn the_same_request_goes_out_again_until_it_is_accepted() {
        let sent = Arc::new(AtomicU32::new(0));
        let request = Request::post("http://x/mcp")
            .header("x-test", "1")
            .body(Full::new(Bytes::from_static(b"{\"id\":1}")))
            .unwrap();
        let counter = Arc::clone(&sent);
        let started = Instant::now();
        let response = send(&RetryPolicy::default(), request, None, move |request| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                assert_eq!(request.method(), http::Method::POST);
                assert_eq!(request.headers()["x-test"], "1");
                Ok(match n {
                    0 => answer(503, Some("1")),
                    1 => answer(429, None),
                    _ => answer(200, None),
                })
            }
        })
        .await
        .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(sent.load(Ordering::SeqCst), 3);
        // 1 s named, then the second retry's backoff: 250 ms doubled, with jitter.
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(1_250), "{waited:?}");
        assert!(waited <= Duration::from_millis(1_500), "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_last_answer_comes_back_with_the_reason_and_a_stop_ends_the_wait() {
        let policy = RetryPolicy::default();
        let request = || Request::new(Full::new(Bytes::new()));
        let busy = send(&policy, request(), None, |_| async {
            Ok(answer(503, Some("0")))
        })
        .await
        .unwrap();
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(gave_up(&busy).is_some_and(|why| why.contains("max_retries")));
        let plain = send(&policy, request(), None, |_| async {
            Ok(answer(500, None))
        })
        .await
        .unwrap();
        assert!(gave_up(&plain).is_none());

        let stop = CancellationToken::new();
        let counter = Arc::new(AtomicU32::new(0));
        let waiting = {
            let (stop, counter) = (stop.clone(), Arc::clone(&counter));
            tokio::spawn(async move {
                send(&policy, request(), Some(&stop), move |_| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    async { Ok(answer(503, Some("5"))) }
                })
                .await
                .map(|_| ())
            })
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop.cancel();
        let outcome = waiting.await.unwrap();
        assert!(matches!(outcome, Err(Error::Closed)), "{outcome:?}");
        // The wait (5 s) ended with the stop: nothing more was sent.
        assert_eq!(counter.load(Ordering::SeqCst), 1);
    }
}
