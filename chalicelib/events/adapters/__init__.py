"""The engine's adapters to the outside world: the game bridge and its signing, the notice channels (log, SNS,
webhook), a dry run's stand-ins for them, and the AWS clients that put the tick to sleep and wake it.

Invariant: an adapter implements the action contract (`events/actions/`: a `Bridge`, a `Channel`) or a use
case's port (`runner/sleep.Switches`, the nudge's invoke) and never reaches the store, the runner or the
controls; what it meets outside is turned into the contract's values (an Outcome, a Probe, a ChannelError).
"""
