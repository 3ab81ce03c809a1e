package offsite

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
)

// Reason says what went wrong in words a condition can carry.
type Reason string

// The reasons, each with what the admin does about it in Error's message.
const (
	// ReasonInvalid: the target or the key is malformed (found without I/O).
	ReasonInvalid Reason = "Invalid"
	// ReasonUnreachable: no connection (DNS, refused, reset, closed).
	ReasonUnreachable Reason = "Unreachable"
	// ReasonUntrusted: the server's certificate is not signed by a trusted CA.
	ReasonUntrusted Reason = "Untrusted"
	// ReasonUnauthorized: the server refused the credentials or their rights.
	ReasonUnauthorized Reason = "Unauthorized"
	// ReasonNoSuchBucket: the bucket does not exist.
	ReasonNoSuchBucket Reason = "NoSuchBucket"
	// ReasonNotFound: a backup's object is gone.
	ReasonNotFound Reason = "NotFound"
	// ReasonExists: a backup of this ID is already published.
	ReasonExists Reason = "AlreadyExists"
	// ReasonCorrupt: the stored bytes are not those written.
	ReasonCorrupt Reason = "Corrupt"
	// ReasonWrongKey: the stored bytes are intact but the key does not open them.
	ReasonWrongKey Reason = "WrongKey"
	// ReasonServerError: the server failed (5xx after retries) or refused the request.
	ReasonServerError Reason = "ServerError"
	// ReasonSlow: the server did not answer before the deadline.
	ReasonSlow Reason = "Slow"
	// ReasonInterrupted: the caller canceled (the operator is stopping).
	ReasonInterrupted Reason = "Interrupted"
)

// whatToDo is the admin's next step for each reason.
var whatToDo = map[Reason]string{
	ReasonInvalid:      "correct the backup target or the key Secret",
	ReasonUnreachable:  "check the endpoint URL, DNS, network policies and that the S3 service runs",
	ReasonUntrusted:    "put the CA that signed the server's certificate into the target's CA bundle",
	ReasonUnauthorized: "check the access key, secret key and region in the credentials Secret, and that the key may list, read, write and delete in the bucket",
	ReasonNoSuchBucket: "create the bucket, or correct its name in the backup target",
	ReasonNotFound:     "the object was deleted (a bucket lifecycle rule, or by hand): this backup cannot be restored; take a new one and check the bucket's lifecycle rules",
	ReasonExists:       "a backup of this name was already published at this time: give the new backup another name",
	ReasonCorrupt:      "the stored bytes differ from those written: do not restore from this backup; take a new one and check the S3 service's storage",
	ReasonWrongKey:     "use the encryption key Secret this backup was made with (see the manifest's key fingerprint)",
	ReasonServerError:  "the S3 service failed: see its logs; the operator retries",
	ReasonSlow:         "the S3 service did not answer in time: check its load and the network; the operator retries",
	ReasonInterrupted:  "the operation was canceled; the operator retries",
}

// Error is a failure of an operation on the bucket, with a Reason for conditions.
type Error struct {
	Reason Reason
	// Op is what was being done: "check", "upload", "verify", "publish", "list", "get",
	// "open", "delete", "new".
	Op string
	// Endpoint, Bucket and Key say where (Key may be empty).
	Endpoint, Bucket, Key string
	Err                   error
	// hint replaces the reason's next step where the store knows better.
	hint string
}

func (e *Error) Error() string {
	where := "s3://" + e.Bucket
	if e.Key != "" {
		where += "/" + e.Key
	}
	if e.Endpoint != "" {
		where += " at " + e.Endpoint
	}
	msg := fmt.Sprintf("offsite backup: %s %s: %s", e.Op, where, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	hint := e.hint
	if hint == "" {
		hint = whatToDo[e.Reason]
	}
	if hint != "" {
		msg += " (" + hint + ")"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf is the Reason of an *Error in err's chain, or "".
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// classify names the reason of an error from the S3 client, the network or the
// context. Errors it does not know are the server's (it answered, but not as asked).
func classify(err error) Reason {
	var known *Error
	var resp minio.ErrorResponse
	var unknownAuthority x509.UnknownAuthorityError
	var invalidCert x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verification *tls.CertificateVerificationError
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case errors.As(err, &known):
		return known.Reason
	case errors.Is(err, context.DeadlineExceeded):
		return ReasonSlow
	case errors.Is(err, context.Canceled):
		return ReasonInterrupted
	case errors.As(err, &resp):
		return classifyResponse(resp)
	case errors.As(err, &unknownAuthority), errors.As(err, &invalidCert), errors.As(err, &hostname), errors.As(err, &verification):
		return ReasonUntrusted
	case errors.As(err, &netErr), errors.As(err, &urlErr):
		if netErr != nil && netErr.Timeout() {
			return ReasonSlow
		}
		return ReasonUnreachable
	}
	return ReasonServerError
}

func classifyResponse(resp minio.ErrorResponse) Reason {
	switch resp.Code {
	case minio.NoSuchBucket:
		return ReasonNoSuchBucket
	case minio.NoSuchKey, "NotFound":
		return ReasonNotFound
	case minio.AccessDenied, "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
		"AuthorizationHeaderMalformed", "InvalidRegion", "AccountProblem", "AllAccessDisabled":
		return ReasonUnauthorized
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return ReasonUnauthorized
	case resp.StatusCode == http.StatusNotFound:
		return ReasonNotFound
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusGatewayTimeout:
		return ReasonSlow
	}
	return ReasonServerError
}

// fail makes err an *Error of op on key (an *Error passes through, keeping its reason).
func (s *Store) fail(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var known *Error
	if errors.As(err, &known) {
		return err
	}
	return &Error{Reason: classify(err), Op: op, Endpoint: s.loc.Endpoint, Bucket: s.loc.Bucket, Key: key, Err: trimURL(err)}
}

// failObject is fail for a request on an object: S3 answers a HEAD of an object in a
// missing bucket with a bare 404, so a NotFound is checked against the bucket.
func (s *Store) failObject(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	if classify(err) == ReasonNotFound {
		if exists, bucketErr := s.client.BucketExists(ctx, s.loc.Bucket); bucketErr == nil && !exists {
			return s.failWith(ReasonNoSuchBucket, op, key, errors.New("the bucket does not exist"))
		}
	}
	return s.fail(op, key, err)
}

// failWith is an *Error of a reason found by the store itself (Corrupt, WrongKey, …).
func (s *Store) failWith(reason Reason, op, key string, err error) error {
	return &Error{Reason: reason, Op: op, Endpoint: s.loc.Endpoint, Bucket: s.loc.Bucket, Key: key, Err: err}
}

// trimURL drops the request URL a *url.Error repeats (the message names the object
// already; a presigned or long URL only hides the cause).
func trimURL(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) && strings.Contains(err.Error(), urlErr.URL) {
		return fmt.Errorf("%s: %w", urlErr.Op, urlErr.Err)
	}
	return err
}
