"""The in-memory rooms store (one server, no outside service) against the rooms contract."""

import pytest

from tests.support.rooms_contract import check_contract
from vizcore.lessons.rooms import MemoryRooms, RoomError, check_code
from vizcore.lessons.stores import open_rooms


def test_memory_rooms_keep_the_contract():
    check_contract(lambda clock: MemoryRooms(clock=clock))


def test_codes_are_unguessable_enough_for_a_school():
    # >= 6 characters from >= 30 symbols (issue 34 C); none of them reads as another
    from vizcore.lessons.rooms import ALPHABET, CODE_LENGTH

    assert CODE_LENGTH >= 6 and len(set(ALPHABET)) >= 30
    assert not set(ALPHABET) & set("01IO")


def test_a_code_is_read_as_typed():
    assert check_code(" ab2-cd3 ") == "AB2CD3"


def test_the_store_is_chosen_by_address():
    assert isinstance(open_rooms(None), MemoryRooms) and isinstance(open_rooms("memory"), MemoryRooms)
    with pytest.raises(RoomError, match="redis://"):
        open_rooms("postgres://x")
