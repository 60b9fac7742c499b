-- wrk script: POST /v1/systemone with Laya-like bodies read from BODIES (one JSON per line),
-- each connection walking the list from its own offset. Counts non-200 answers as errors.
local bodies = {}
local counter = 0
local non200 = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  local path = os.getenv("BODIES") or "bodies.jsonl"
  for line in io.lines(path) do bodies[#bodies + 1] = line end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  idx = (id or 0) * 97
end

function request()
  idx = idx + 1
  return wrk.format(nil, "/v1/systemone", nil, bodies[(idx % #bodies) + 1])
end

function response(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_s=%.2f rps=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f non2xx=%d connect=%d read=%d write=%d timeout=%d status=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, e.status, e.connect, e.read, e.write, e.timeout, e.status))
end
