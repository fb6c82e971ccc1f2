package runtime_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Routes of the table. New routes add a constant and their lines below.
const (
	routeGenerate  = "POST /api/generations/generate"
	routeStatus    = "GET /api/generations/status/"
	routeEstimate  = "POST /api/long-story/videos/estimate"
	routeLongVideo = "POST /api/long-story/videos"
	routeLongState = "GET /api/long-story/videos/"
	routeGenList   = "GET /api/generations"
	routeGenCancel = "POST /api/generations/"
	routeGenPrice  = "POST /api/generations/estimate"
	routeLongList  = "GET /api/long-story/videos"
	routeLongStop  = "POST /api/long-story/videos/"
)

// hostile is one malformed request: the route, what follows the route's
// path (ids), the Content-Type ("" sends application/json; "-" none), the
// body, and the status it must answer.
type hostile struct {
	name   string
	route  string
	suffix string
	ctype  string
	body   string
	status int
}

// nest is v nested n levels deep in arrays.
func nest(n int, v string) string { return strings.Repeat("[", n) + v + strings.Repeat("]", n) }

func gen1(input string) string {
	return `{"model":"provider-a","model_version":"zeta","input":` + input + `}`
}

func story(fields string) string {
	return `{"prompt":"A day at the sea","language_code":"en",` + fields + `}`
}

const oneScene = `"scenes":[{"scene_number":1,"prompt":"Waves"}]`

var hostileRequests = []hostile{
	// Not one JSON object.
	{"generate: not JSON", routeGenerate, "", "", `{"model":`, 400},
	{"generate: empty body", routeGenerate, "", "", ``, 400},
	{"generate: a JSON array", routeGenerate, "", "", `[{"model":"provider-a"}]`, 400},
	{"generate: a JSON string", routeGenerate, "", "", `"provider-a"`, 400},
	{"generate: a JSON number", routeGenerate, "", "", `42`, 400},
	{"generate: JSON null", routeGenerate, "", "", `null`, 400},
	{"generate: two objects", routeGenerate, "", "", gen1(`{"prompt":"a"}`) + ` {}`, 400},
	{"generate: trailing garbage", routeGenerate, "", "", gen1(`{"prompt":"a"}`) + `]`, 400},
	{"generate: a BOM before the object", routeGenerate, "", "", "\ufeff" + gen1(`{"prompt":"a"}`), 400},
	// Wrong types.
	{"generate: model a number", routeGenerate, "", "", `{"model":1,"model_version":"zeta","input":{"prompt":"a"}}`, 400},
	{"generate: model_version a list", routeGenerate, "", "", `{"model":"provider-a","model_version":["zeta"],"input":{"prompt":"a"}}`, 400},
	{"generate: input a string", routeGenerate, "", "", gen1(`"prompt=a"`), 400},
	{"generate: input a list", routeGenerate, "", "", gen1(`[{"prompt":"a"}]`), 400},
	{"generate: prompt an object", routeGenerate, "", "", gen1(`{"prompt":{"text":"a"}}`), 400},
	{"generate: prompt null", routeGenerate, "", "", gen1(`{"prompt":null}`), 400},
	{"generate: prompt true", routeGenerate, "", "", gen1(`{"prompt":true}`), 400},
	{"generate: image_count a string", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"image_count":"2"}`, 400},
	{"generate: image_count a fraction", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"image_count":2.5}`, 400},
	{"generate: image_count negative", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"image_count":-1}`, 400},
	{"generate: boolean as 1", routeGenerate, "", "", `{"model":"provider-a","model_version":"alpha-3.1-fast","input":{"prompt":"a","generate_audio":1}}`, 400},
	// Huge numbers.
	{"generate: image_count past float64", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"image_count":1e400}`, 400},
	{"generate: image_count past int64", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"image_count":99999999999999999999999}`, 400},
	{"generate: a numeric enum past int64", routeGenerate, "", "", `{"model":"provider-b","model_version":"beta-2","input":{"prompt":"a","seconds":1e309,"aspect_ratio":"landscape"}}`, 400},
	{"generate: a 10,000-digit number", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"image_count":1` + strings.Repeat("0", 10000) + `}`, 400},
	// Duplicate keys, non-UTF-8, nesting.
	{"generate: duplicate top-level key", routeGenerate, "", "", `{"model":"provider-a","model":"provider-b","model_version":"zeta","input":{"prompt":"a"}}`, 400},
	{"generate: duplicate input key", routeGenerate, "", "", gen1(`{"prompt":"a cat","prompt":"a dog"}`), 400},
	{"generate: duplicate key by escape", routeGenerate, "", "", gen1(`{"prompt":"a","\u0070rompt":"b"}`), 400},
	{"generate: non-UTF-8 body", routeGenerate, "", "", "\xff\xfe{\x00}", 400},
	{"generate: non-UTF-8 prompt", routeGenerate, "", "", gen1("{\"prompt\":\"caf\xe9\"}"), 400},
	{"generate: lone surrogate escape", routeGenerate, "", "", gen1(`{"prompt":"\ud800"}`), 400},
	{"generate: nested 40 deep in input", routeGenerate, "", "", gen1(`{"prompt":"a","x":` + nest(40, "1") + `}`), 400},
	{"generate: nested 100,000 deep", routeGenerate, "", "", nest(100000, ""), 400},
	{"generate: objects nested 10,000 deep", routeGenerate, "", "", strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), 400},
	// Limits, one past each.
	{"generate: alpha prompt 20,001", routeGenerate, "", "", `{"model":"provider-a","model_version":"alpha-3.1-fast","input":{"prompt":"` + strings.Repeat("a", 20001) + `"}}`, 400},
	{"generate: zeta-pro prompt 50,001", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta-pro","input":{"prompt":"` + strings.Repeat("a", 50001) + `"}}`, 400},
	{"generate: zeta-pro prompt 2 (under 3)", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta-pro","input":{"prompt":"ab"}}`, 400},
	{"generate: image_count 5", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"image_count":5}`, 400},
	{"generate: image_count 0", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"image_count":0}`, 400},
	// Injection-looking values where they are invalid.
	{"generate: SQL in model", routeGenerate, "", "", `{"model":"provider-a' OR '1'='1","model_version":"zeta","input":{"prompt":"a"}}`, 400},
	{"generate: NoSQL operator as model", routeGenerate, "", "", `{"model":{"$ne":null},"model_version":"zeta","input":{"prompt":"a"}}`, 400},
	{"generate: NoSQL operator as input key", routeGenerate, "", "", gen1(`{"prompt":"a","$where":"sleep(1000)"}`), 400},
	{"generate: JSONPath as model_version", routeGenerate, "", "", `{"model":"provider-a","model_version":"$..*","input":{"prompt":"a"}}`, 400},
	{"generate: __proto__ field", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"__proto__":{"admin":true}}`, 400},
	{"generate: user_id smuggled in", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"user_id":"usr_other"}`, 400},
	{"generate: credits_used smuggled in", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"credits_used":"0"}`, 400},
	{"generate: SQL in an enum", routeGenerate, "", "", gen1(`{"prompt":"a","aspect_ratio":"1:1'; DROP TABLE generations;--"}`), 400},
	// URL inputs.
	{"generate: javascript: image URL", routeGenerate, "", "", `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"a","start_image":"javascript:alert(1)"}}`, 400},
	{"generate: file: image URL", routeGenerate, "", "", `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"a","start_image":"file:///etc/passwd"}}`, 400},
	{"generate: metadata endpoint URL", routeGenerate, "", "", `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"a","start_image":"https://169.254.169.254/latest/meta-data"}}`, 400},
	{"generate: data: URI of HTML", routeGenerate, "", "", `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"a","start_image":"data:text/html;base64,PGgxPg=="}}`, 400},
	// Content types and size.
	{"generate: text/plain", routeGenerate, "", "text/plain", gen1(`{"prompt":"a"}`), 415},
	{"generate: form-encoded", routeGenerate, "", "application/x-www-form-urlencoded", `model=provider-a&model_version=zeta`, 415},
	{"generate: multipart", routeGenerate, "", "multipart/form-data; boundary=x", "--x\r\n\r\n--x--", 415},
	{"generate: XML", routeGenerate, "", "application/xml", `<generate/>`, 415},
	{"generate: a body just over the limit", routeGenerate, "", "", gen1(`{"prompt":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`), 413},
	// Path ids that are neither a UUID nor a positive integer.
	{"status: letters", routeStatus, "abc", "-", "", 400},
	{"status: zero", routeStatus, "0", "-", "", 400},
	{"status: negative", routeStatus, "-1", "-", "", 400},
	{"status: leading zero", routeStatus, "01", "-", "", 400},
	{"status: fraction", routeStatus, "1.5", "-", "", 400},
	{"status: exponent", routeStatus, "1e3", "-", "", 400},
	{"status: past int64", routeStatus, strings.Repeat("9", 30), "-", "", 400},
	{"status: SQL", routeStatus, "1%20OR%201=1", "-", "", 400},
	{"status: SQL comment", routeStatus, "%27%20OR%20%271%27=%271%27%20--", "-", "", 400},
	{"status: NoSQL operator", routeStatus, "%7B%22%24ne%22%3Anull%7D", "-", "", 400},
	{"status: JSONPath", routeStatus, "$..*", "-", "", 400},
	{"status: UUID without dashes", routeStatus, "3348f3aa5fd04758860a3ebaf4cfbcc7", "-", "", 400},
	{"status: UUID in braces", routeStatus, "%7B3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7%7D", "-", "", 400},
	{"status: UUID with a suffix", routeStatus, "3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7x", "-", "", 400},
	{"status: non-UTF-8", routeStatus, "%ff%fe", "-", "", 400},
	{"status: a 2,000-character id", routeStatus, strings.Repeat("a", 2000), "-", "", 400},
	{"long video status: an integer", routeLongState, "1", "-", "", 400},
	{"long video status: SQL", routeLongState, "1%20OR%201=1", "-", "", 400},
	{"long video status: NoSQL", routeLongState, "%7B%22%24gt%22%3A%22%22%7D", "-", "", 400},
	{"long video status: JSONPath", routeLongState, "$.videos[*]", "-", "", 400},
	// Lists: bad parameters are refused, not ignored.
	{"generation list: limit 0", routeGenList, "?limit=0", "-", "", 400},
	{"generation list: limit past the cap", routeGenList, "?limit=101", "-", "", 400},
	{"generation list: limit huge", routeGenList, "?limit=99999999999999999999", "-", "", 400},
	{"generation list: limit not a number", routeGenList, "?limit=ten", "-", "", 400},
	{"generation list: unknown status", routeGenList, "?status=done", "-", "", 400},
	{"generation list: SQL status", routeGenList, "?status=completed'%20OR%201=1--", "-", "", 400},
	{"generation list: forged cursor", routeGenList, "?cursor=eyJ0IjoiMjAyNi0wMS0wMVQwMDowMDowMFoiLCJpIjoiIn0", "-", "", 400},
	{"generation list: cursor not base64", routeGenList, "?cursor=%24.items%5B*%5D", "-", "", 400},
	{"generation list: unknown parameter", routeGenList, "?sort=desc", "-", "", 400},
	{"generation list: model too long", routeGenList, "?model=" + strings.Repeat("m", 65), "-", "", 400},
	{"long video list: limit negative", routeLongList, "?limit=-1", "-", "", 400},
	{"long video list: NoSQL status", routeLongList, "?status=%7B%22%24ne%22%3A1%7D", "-", "", 400},
	// Cancel: ids that are neither UUID nor integer, or nobody's.
	{"generation cancel: SQL id", routeGenCancel, "1%20OR%201=1/cancel", "-", "", 400},
	{"generation cancel: JSONPath id", routeGenCancel, "$..id/cancel", "-", "", 400},
	{"generation cancel: nobody's", routeGenCancel, "00000000-0000-4000-8000-000000000000/cancel", "-", "", 404},
	{"long video cancel: an integer", routeLongStop, "1/cancel", "-", "", 400},
	{"long video cancel: nobody's", routeLongStop, "00000000-0000-4000-8000-000000000000/cancel", "-", "", 404},
	// The generation estimate validates like generate.
	{"generation estimate: not JSON", routeGenPrice, "", "", `{"model":`, 400},
	{"generation estimate: wrong content type", routeGenPrice, "", "text/plain", gen1(`{"prompt":"a"}`), 415},
	{"generation estimate: unknown variant", routeGenPrice, "", "", `{"model":"provider-a","model_version":"nope","input":{"prompt":"a"}}`, 400},
	{"generation estimate: webhook on plain http", routeGenPrice, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"webhook_url":"http://example.com/h"}`, 400},
	{"generate: webhook on a private address", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"webhook_url":"https://10.0.0.8/h"}`, 400},
	{"generate: webhook events unknown", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"webhook_url":"https://example.com/h","webhook_events":["everything"]}`, 400},
	{"generate: webhook events a string", routeGenerate, "", "", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"a"},"webhook_url":"https://example.com/h","webhook_events":"generation.failed"}`, 400},
	// The estimate.
	{"estimate: not JSON", routeEstimate, "", "", `{`, 400},
	{"estimate: empty object", routeEstimate, "", "", `{}`, 400},
	{"estimate: scene_count a string", routeEstimate, "", "", `{"model":"beta-2","scene_count":"3"}`, 400},
	{"estimate: scene_count huge", routeEstimate, "", "", `{"model":"beta-2","scene_count":1e400}`, 400},
	{"estimate: scene_count 21", routeEstimate, "", "", `{"model":"beta-2","scene_count":21}`, 400},
	{"estimate: duplicate keys", routeEstimate, "", "", `{"model":"beta-2","scene_count":3,"scene_count":4}`, 400},
	{"estimate: NoSQL model", routeEstimate, "", "", `{"model":{"$regex":".*"},"scene_count":3}`, 400},
	{"estimate: text/plain", routeEstimate, "", "text/plain", `{"model":"beta-2","scene_count":3}`, 415},
	{"estimate: a body just over the limit", routeEstimate, "", "", `{"model":"` + strings.Repeat("b", httpapi.MaxBodyBytes) + `"}`, 413},
	// The long-form create.
	{"long video: an array", routeLongVideo, "", "", `[]`, 400},
	{"long video: theme 5,001 characters", routeLongVideo, "", "", `{"prompt":"` + strings.Repeat("é", 5001) + `","language_code":"en",` + oneScene + `}`, 400},
	{"long video: scene prompt 2,001", routeLongVideo, "", "", story(`"scenes":[{"scene_number":1,"prompt":"` + strings.Repeat("a", 2001) + `"}]`), 400},
	{"long video: narration 1,001", routeLongVideo, "", "", story(`"scenes":[{"scene_number":1,"prompt":"a","narration":"` + strings.Repeat("a", 1001) + `"}]`), 400},
	{"long video: 21 scenes", routeLongVideo, "", "", story(`"scenes":[` + strings.TrimSuffix(strings.Repeat(`{"scene_number":1,"prompt":"a"},`, 21), ",") + `]`), 400},
	{"long video: no scenes", routeLongVideo, "", "", story(`"scenes":[]`), 400},
	{"long video: scenes an object", routeLongVideo, "", "", story(`"scenes":{"1":"a"}`), 400},
	{"long video: repeated scene numbers", routeLongVideo, "", "", story(`"scenes":[{"scene_number":1,"prompt":"a"},{"scene_number":1,"prompt":"b"}]`), 400},
	{"long video: scene_number a string", routeLongVideo, "", "", story(`"scenes":[{"scene_number":"1","prompt":"a"}]`), 400},
	{"long video: scene_number huge", routeLongVideo, "", "", story(`"scenes":[{"scene_number":1e400,"prompt":"a"}]`), 400},
	{"long video: unknown language", routeLongVideo, "", "", `{"prompt":"a","language_code":"xx",` + oneScene + `}`, 400},
	{"long video: SQL style", routeLongVideo, "", "", story(`"video_style":"noir'; DROP TABLE long_videos;--",` + oneScene), 400},
	{"long video: enable_narration a string", routeLongVideo, "", "", story(`"enable_narration":"yes",` + oneScene), 400},
	{"long video: duplicate keys", routeLongVideo, "", "", story(`"language_code":"es",` + oneScene), 400},
	{"long video: non-UTF-8 theme", routeLongVideo, "", "", "{\"prompt\":\"\xc3\x28\",\"language_code\":\"en\"," + oneScene + "}", 400},
	{"long video: nested 40 deep", routeLongVideo, "", "", story(`"x":` + nest(40, "1") + `,` + oneScene), 400},
	{"long video: text/plain", routeLongVideo, "", "text/plain", story(oneScene), 415},
	{"long video: a body just over the limit", routeLongVideo, "", "", story(`"x":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `",` + oneScene), 413},
}

// TestMalformedRequestsAnswer4xxAndChangeNothing sends every line of the
// table to the running service: each answers its 4xx in the error
// envelope, and no credit, hold or record moves.
func TestMalformedRequestsAnswer4xxAndChangeNothing(t *testing.T) {
	if len(hostileRequests) < 60 {
		t.Fatalf("only %d malformed requests in the table", len(hostileRequests))
	}
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	ctx := context.Background()
	videos := func() int {
		vs, err := rt.Embedded.ProcessingLongVideos(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(vs)
	}
	before, beforeVideos := account(t, rt, owner.UserID), videos()
	for _, h := range hostileRequests {
		t.Run(h.name, func(t *testing.T) {
			method, path, _ := strings.Cut(h.route, " ")
			var body io.Reader
			if h.body != "" {
				body = strings.NewReader(h.body)
			}
			req, err := http.NewRequest(method, rt.BaseURL+path+h.suffix, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+owner.APIKey)
			switch h.ctype {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", h.ctype)
			}
			a := do(t, req)
			checkEnvelope(t, a, h.status)
			unchanged(t, rt, before, 0)
			if n := videos(); n != beforeVideos {
				t.Errorf("%d long videos processing, want %d", n, beforeVideos)
			}
		})
	}
}

// do sends one of the table's requests, each malformed on purpose: the
// contract test checks its answer against the documented errors.
func do(t *testing.T, req *http.Request) answer {
	t.Helper()
	return send(t, req, true)
}
