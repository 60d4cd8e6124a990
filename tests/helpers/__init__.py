"""What the test modules share: runners, fakes and builders (no tests of their own)."""
