// Errors made without a stack, for the reasons a poll ends with, made once per poll on both
// sides of the feed (every handed-over poll makes one): what they say is all in their message,
// and Node reads a destroy reason's stack, which with source maps on (the image runs with
// --enable-source-maps) is mapped frame by frame. Capturing and mapping cost ctrl 1.1% and a
// simulated agent 5% of their CPU in bench:feed at 1,000 agents.
export class StacklessError extends Error {
  constructor(message: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = limit;
    }
  }
}
