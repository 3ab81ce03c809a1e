package linstor

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
)

// ErrUnreachable means the LINSTOR controller did not answer; the caller requeues.
var ErrUnreachable = errors.New("LINSTOR controller not reachable")

// requestTimeout bounds one REST call so a hung controller cannot block a reconcile.
const requestTimeout = 15 * time.Second

// NewClient returns a golinstor client for the controller at rawURL.
func NewClient(rawURL string, transport http.RoundTripper) (*lapi.Client, error) {
	return newClient(rawURL, &http.Client{Timeout: requestTimeout, Transport: transport})
}

func newClient(rawURL string, hc *http.Client) (*lapi.Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("LINSTOR URL %q: %w", rawURL, err)
	}
	return lapi.NewClient(lapi.BaseURL(u), lapi.HTTPClient(hc), lapi.Log(nil))
}

// IsNotFound reports a 404 from LINSTOR (golinstor's sentinel).
func IsNotFound(err error) bool { return errors.Is(err, lapi.NotFoundError) }
