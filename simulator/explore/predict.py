"""Predict, then see: the explorer hides a request's outcome until the reader has guessed it.

With *predict* on, the chosen request of the first server shown is shown as the server held it
*before* the script ran, and the page asks: admitted or refused (and, if the reader wishes, how
many remain after it)? The answer reveals the decision, the reply and the keys after, and
counts towards a score kept while the page is open. A request answered once stays revealed;
stepping on hides the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simulator.checks import ConfigError

__all__ = ["Guesses", "Said"]

#: A request as the reader guessed it: the algorithm, the client and its index.
Key = tuple[str, str, int]


@dataclass(frozen=True)
class Said:
    """What a guess was told: right or not, and the line saying so."""

    right: bool
    line: str


@dataclass
class Guesses:
    """The requests revealed and the score so far."""

    revealed: set[Key] = field(default_factory=set)
    asked: int = 0
    right: int = 0

    def hidden(self, key: Key) -> bool:
        return key not in self.revealed

    def answer(
        self, key: Key, admit: bool, remaining_text: str, allowed: bool, remaining: int
    ) -> Said:
        """The reader said ``admit`` (and perhaps the remaining) of the request ``key``, which
        was ``allowed`` with ``remaining`` left; a remaining that is not a whole number is
        refused naming the box."""
        guess: int | None = None
        if remaining_text.strip():
            try:
                guess = int(remaining_text.strip())
            except ValueError:
                raise ConfigError(
                    f"remaining (requests): a whole number or nothing, got {remaining_text!r}"
                ) from None
        right = admit == allowed
        self.revealed.add(key)
        self.asked += 1
        self.right += right
        decided = "admitted" if allowed else "refused"
        line = f"{'right' if right else 'not this time'}: it was {decided}"
        if guess is not None:
            line += f", {remaining:,} remaining ({'as you said' if guess == remaining else f'you said {guess:,}'})"
        return Said(right, line)

    def score(self) -> str:
        return f"score: {self.right} of {self.asked}"
