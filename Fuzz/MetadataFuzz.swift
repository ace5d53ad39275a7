// libFuzzer target for what a provider's metadata document does to a request: every string in
// the document (its endpoints, and anything else a hostile provider puts there) becomes a URL,
// is checked as Latchkey checks every URL before it becomes a request
// (EndpointSecurity.isRequestTarget), and, when it passes, becomes an HTTP request, as the wire
// builds it. A URL that passes the check and still traps the request type (`Schemeless URL is
// not supported`, `Invalid URL`) is a crash here. Built by scripts/fuzz; the check is compiled
// in, instrumented, swift-http-types comes from the debug build.
import Foundation
import HTTPTypes

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    var texts = [String(decoding: data, as: UTF8.self)]
    if let document = try? JSONDecoder().decode(JSONValue.self, from: data) { collect(document, into: &texts) }
    for text in texts {
        guard let url = URL(string: text) else { continue }
        if EndpointSecurity.isRequestTarget(url) {
            let request = HTTPRequest(method: .get, url: url)
            _ = request.url
        }
        _ = EndpointSecurity.isAcceptable(url)
    }
    return 0
}

private func collect(_ value: JSONValue, into texts: inout [String]) {
    switch value {
    case .string(let text): texts.append(text)
    case .array(let values): for value in values { collect(value, into: &texts) }
    case .object(let fields):
        for (key, value) in fields {
            texts.append(key)
            collect(value, into: &texts)
        }
    default: break
    }
}
