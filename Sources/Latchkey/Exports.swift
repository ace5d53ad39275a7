// Tokens, credentials and the seal live in LatchkeyRecords, which loads nothing but Foundation
// Essentials, swift-crypto and swift-system; a program that imports Latchkey sees them here.
@_exported public import LatchkeyRecords
