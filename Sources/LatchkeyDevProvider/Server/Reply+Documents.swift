import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension Reply {
    /// A published document (metadata, key set): cacheable for `maxAge` seconds, with a strong
    /// `ETag` (a digest of the body) and a `Last-Modified`, and `304 Not Modified` without a body
    /// to a request whose `If-None-Match` names that tag (RFC 9110 §13.1.2, §15.4.5).
    static func document(
        _ object: Any, contentType: String = "application/json", maxAge: Int, modified: Date, request: Request
    ) -> Response {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        let tag = "\"" + SHA256.hash(data: data).prefix(16).map { String(format: "%02x", $0) }.joined() + "\""
        var headers: HTTPFields = [.contentType: contentType, .cacheControl: "public, max-age=\(max(0, maxAge))"]
        headers[.eTag] = tag
        headers[.lastModified] = Self.httpDate(modified)
        let asked = request.headers[values: .ifNoneMatch].flatMap { $0.split(separator: ",") }.map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if asked.contains(tag) || asked.contains("*") {
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// An IMF-fixdate (RFC 9110 §5.6.7).
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
