"""The guide never forbids a real name (Python): places where static analysis is easy to get
wrong, each a file cut right after `receiver.` and the name that really comes next there.

A mask that forbids a name that exists is worse than no mask: the model writes a contortion
(`cfg.__getattribute__("timeout_seconds")`) and the person gets wrong code without a word. Each
case runs the real analysis (Jedi's, python/analysis.py) on the cut file in a workspace written
under tmp_path, and the real monitor over a small vocabulary that spells the right name; the
tokens writing that name, and a token ending it, must keep finite logits at the guide's default
bias (the decode loop's own view). Either the receiver is not known (unguided), or its set has
the name, or the set is not complete (left alone).

The last cases are the other side: where the set is really complete and simple, the guide still
masks (a name that does not exist is removed), so that this suite cannot pass by turning the
guide off.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from spec_lsp.engine.guide.monitor import Monitor
from spec_lsp.engine.guide.python.analysis import Analyser
from spec_lsp.engine.guide.table import Hooks, Members, Table
from spec_lsp.engine.guide.vocabulary import NameTokens

ENDINGS = [b"(", b")", b"\n", b" ", b".", b":", b",", b"[", b" ="]
DECOY = "explode_now"  # a member no case's receiver has
OTHERS = [b"<eos>", b"zz", b"qq", DECOY.encode(), b"expl", b"ode_now"]
# every character of a name a token of its own: every member can be written (a vocabulary in
# which none can be leaves the row alone, which would hide what the mask does)
LETTERS = [c.encode() for c in "_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"]


@dataclass(frozen=True)
class Case:
    id: str
    text: str  # main.py, cut right after `receiver.` (dedented here)
    name: str  # the name that comes next
    files: dict[str, str] = field(default_factory=dict)  # the workspace's other files


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


MODELS = src(
    """
    class User:
        def __init__(self, name):
            self.name = name

        def save(self):
            return self.name


    User.cache = {}
    """
)
REGISTERED = src(
    """
    class Registered(type):
        def __new__(mcs, name, bases, namespace):
            cls = super().__new__(mcs, name, bases, namespace)
            cls.registry = []
            return cls
    """
)


CASES = [
    # -- dynamic attributes: setattr, __dict__, vars(), __getattr__, __getattribute__, __setattr__
    Case(
        "setattr_in_init_used_above",
        """
        class Options:
            def __init__(self, **kwargs):
                for key, value in kwargs.items():
                    setattr(self, key, value)


        opts = Options(retries=3)
        print(opts.retries)
        for _ in range(opts.""",
        "retries",
    ),
    Case(
        "setattr_in_init",
        """
        class Options:
            def __init__(self, **kwargs):
                for key, value in kwargs.items():
                    setattr(self, key, value)


        opts = Options(retries=3)
        for _ in range(opts.""",
        "retries",
    ),
    Case(
        "dict_update_in_init",
        """
        class Record:
            def __init__(self, data):
                self.__dict__.update(data)


        record = Record({"title": "x"})
        print(record.""",
        "title",
    ),
    Case(
        "dict_item_written",
        """
        class Bag:
            def put(self, key, value):
                self.__dict__[key] = value


        bag = Bag()
        bag.put("colour", "red")
        print(bag.""",
        "colour",
    ),
    Case(
        "dict_replaced",
        """
        class Row:
            def __init__(self, **fields):
                self.__dict__ = dict(fields)


        row = Row(id=1)
        print(row.""",
        "id",
    ),
    Case(
        "vars_updated",
        """
        class State:
            def load(self, saved):
                vars(self).update(saved)


        state = State()
        state.load({"step": 3})
        print(state.""",
        "step",
    ),
    Case(
        "getattr_delegates",
        """
        class Proxy:
            def __init__(self, target):
                self._target = target

            def __getattr__(self, name):
                return getattr(self._target, name)


        proxy = Proxy([])
        proxy.""",
        "append",
    ),
    Case(
        "getattribute_answers_a_name",
        """
        class Lazy:
            def __getattribute__(self, name):
                if name == "value":
                    return 42
                return object.__getattribute__(self, name)


        lazy = Lazy()
        print(lazy.""",
        "value",
    ),
    Case(
        "setattr_hook_renames",
        """
        class Settings:
            def __setattr__(self, name, value):
                object.__setattr__(self, name.lower(), value)


        settings = Settings()
        settings.DEBUG = True
        print(settings.""",
        "debug",
    ),
    Case(
        "setattr_in_a_base_in_another_file",
        """
        from base import Configurable


        class Server(Configurable):
            def start(self):
                return self.""",
        "port",
        {
            "base.py": """
            class Configurable:
                def __init__(self, **options):
                    for key, value in options.items():
                        setattr(self, key, value)
            """
        },
    ),
    Case(
        "getattr_in_a_base_in_another_file",
        """
        from base import Dynamic


        class Child(Dynamic):
            pass


        child = Child()
        child.""",
        "anything",
        {"base.py": "class Dynamic:\n    def __getattr__(self, name):\n        return name\n"},
    ),
    Case(
        "getattribute_in_a_base",
        """
        class Accessors:
            def __getattribute__(self, name):
                if name.startswith("get_"):
                    return lambda: name[4:]
                return object.__getattribute__(self, name)


        class Invoice(Accessors):
            def __init__(self):
                self.lines = []


        invoice = Invoice()
        invoice.""",
        "get_total",
    ),
    Case(
        "new_attribute_in_a_tuple_target",
        """
        import re


        class Route:
            def __init__(self, path):
                self.path = path
                self.path_regex, self.path_format, self.""",
        "path_params",
    ),
    Case(
        "new_attribute_in_a_parenthesised_tuple_target",
        """
        class Span:
            def __init__(self, text):
                self.text = text
                (self.start, self.""",
        "end",
    ),
    Case(
        "new_attribute_in_a_tuple_target_over_lines",
        """
        class Span:
            def __init__(self, pair):
                self.text = pair
                (
                    self.start,
                    self.""",
        "end",
    ),
    Case(
        "new_attribute_in_a_list_target_after_a_comment_with_a_bracket",
        """
        class Span:
            def __init__(self, pair):
                self.text = pair  # a pair (start, end
                [self.start,
                 self.""",
        "end",
    ),
    Case(
        "setattr_on_the_class_in_a_loop",
        """
        class Flags:
            verbose = False


        for flag in ("debug", "trace"):
            setattr(Flags, flag, False)

        if Flags.""",
        "debug",
    ),
    Case(
        "setattr_with_a_literal_name",
        """
        class Config:
            def __init__(self):
                self.name = "app"


        cfg = Config()
        setattr(cfg, "timeout", 3)
        print(cfg.""",
        "timeout",
    ),
    Case(
        "object_setattr_in_a_frozen_dataclass",
        """
        from dataclasses import dataclass


        @dataclass(frozen=True)
        class Span:
            start: int
            end: int

            def __post_init__(self):
                object.__setattr__(self, "length", self.end - self.start)


        span = Span(1, 4)
        print(span.""",
        "length",
    ),
    Case(
        "setattr_in_a_factory_classmethod",
        """
        class Model:
            @classmethod
            def from_row(cls, row):
                obj = cls()
                for key in row:
                    setattr(obj, key, row[key])
                return obj


        user = Model.from_row({"email": "a@b"})
        print(user.""",
        "email",
    ),
    Case(
        "setattr_on_a_parameter_in_a_helper",
        """
        class Config:
            def __init__(self):
                self.name = "app"


        def load(target, values):
            for key, value in values.items():
                setattr(target, key, value)


        cfg = Config()
        load(cfg, {"timeout": 3})
        print(cfg.""",
        "timeout",
    ),
    Case(
        "vars_of_an_instance_updated_outside",
        """
        class Config:
            def __init__(self):
                self.name = "app"


        cfg = Config()
        vars(cfg).update(timeout=3)
        cfg.""",
        "timeout",
    ),
    # -- monkey-patching: an instance, the class, a module, from outside
    Case(
        "instance_attribute_set_outside_the_class",
        """
        import time


        class Config:
            def __init__(self):
                self.name = "app"


        cfg = Config()
        cfg.timeout_seconds = 30
        time.sleep(cfg.""",
        "timeout_seconds",
    ),
    Case(
        "class_attribute_set_after_the_class",
        """
        class Plugin:
            def run(self):
                pass


        Plugin.registry = {}
        print(len(Plugin.""",
        "registry",
    ),
    Case(
        "class_attribute_set_after_the_class_read_on_an_instance",
        """
        class Plugin:
            def run(self):
                pass


        Plugin.registry = {}
        plugin = Plugin()
        print(plugin.""",
        "registry",
    ),
    Case(
        "method_patched_onto_the_class",
        """
        class Client:
            def get(self, url):
                return url


        def _retry(self, url, times=3):
            return self.get(url)


        Client.retry = _retry
        client = Client()
        client.""",
        "retry",
    ),
    Case(
        "attribute_set_on_a_parameter_of_the_type",
        """
        class Config:
            def __init__(self):
                self.name = "app"


        def configure(config: Config) -> None:
            config.verbose = True


        conf = Config()
        configure(conf)
        if conf.""",
        "verbose",
    ),
    Case(
        "module_attribute_set_from_outside",
        """
        import helpers

        helpers.DEBUG = True


        def run():
            if helpers.""",
        "DEBUG",
        {"helpers.py": "def work():\n    return 1\n"},
    ),
    Case(
        "class_patched_in_its_own_module",
        """
        from models import User


        def lookup(name):
            return User.""",
        "cache",
        {"models.py": MODELS},
    ),
    Case(
        "imported_class_s_instance_patched_here",
        """
        from models import User

        user = User("a")
        user.nickname = "x"
        print(user.""",
        "nickname",
        {"models.py": MODELS},
    ),
    Case(
        "attribute_set_on_another_instance_in_a_method",
        """
        class Node:
            def __init__(self):
                self.children = []

            def adopt(self, child):
                child.parent = self
                self.children.append(child)


        root = Node()
        leaf = Node()
        root.adopt(leaf)
        print(leaf.""",
        "parent",
    ),
    # -- mixins and metaclasses
    Case(
        "metaclass_sets_a_class_attribute",
        """
        class Registered(type):
            def __new__(mcs, name, bases, namespace):
                cls = super().__new__(mcs, name, bases, namespace)
                cls.registry = []
                return cls


        class Plugin(metaclass=Registered):
            pass


        print(Plugin.""",
        "registry",
    ),
    Case(
        "metaclass_in_another_file_seen_on_an_instance",
        """
        from meta import Registered


        class Plugin(metaclass=Registered):
            def run(self):
                pass


        plugin = Plugin()
        plugin.""",
        "registry",
        {"meta.py": REGISTERED},
    ),
    Case(
        "metaclass_setattr",
        """
        class AutoFields(type):
            def __init__(cls, name, bases, namespace):
                super().__init__(name, bases, namespace)
                for field_name in namespace.get("FIELDS", ()):
                    setattr(cls, field_name, None)


        class Point(metaclass=AutoFields):
            FIELDS = ("x", "y")


        print(Point.""",
        "x",
    ),
    Case(
        "init_subclass_sets_a_class_attribute",
        """
        class Base:
            def __init_subclass__(cls, **kwargs):
                super().__init_subclass__(**kwargs)
                cls.key = cls.__name__.lower()


        class Child(Base):
            pass


        print(Child.""",
        "key",
    ),
    Case(
        "init_subclass_setattr",
        """
        class Tagged:
            def __init_subclass__(cls, tags=(), **kwargs):
                for tag in tags:
                    setattr(cls, tag, True)


        class Post(Tagged, tags=("draft",)):
            pass


        print(Post.""",
        "draft",
    ),
    Case(
        "mixin_method_on_the_host",
        """
        class JsonMixin:
            def to_json(self):
                return dict(self.fields)


        class Order(JsonMixin):
            def __init__(self):
                self.fields = {}


        order = Order()
        order.""",
        "to_json",
    ),
    # -- __slots__
    Case(
        "slots_set_outside_init",
        """
        class Point:
            __slots__ = ("x", "y")


        point = Point()
        print(point.""",
        "y",
    ),
    Case(
        "slots_from_a_name_set_by_setattr",
        """
        FIELDS = ("host", "port")


        class Address:
            __slots__ = FIELDS

            def __init__(self, *values):
                for name, value in zip(self.__slots__, values):
                    setattr(self, name, value)


        address = Address("h", 1)
        print(address.""",
        "port",
    ),
    Case(
        "slots_made_by_an_expression",
        """
        class Vector:
            __slots__ = tuple(f"c{i}" for i in range(3))


        vector = Vector()
        vector.""",
        "c0",
    ),
    Case(
        "slotted_subclass_of_a_class_with_a_dict",
        """
        class Base:
            pass


        class Packet(Base):
            __slots__ = ("size",)

            def __init__(self, **fields):
                for key, value in fields.items():
                    setattr(self, key, value)


        packet = Packet(size=1, flags=2)
        packet.""",
        "flags",
    ),
    Case(
        "another_class_s_instance_written_through_its_dict",
        """
        class Record:
            def __init__(self, msg):
                self.msg = msg


        class Logger:
            def make(self, msg, extra):
                rv = Record(msg)
                for key in extra:
                    rv.__dict__[key] = extra[key]
                return rv


        record = Logger().make("m", {"user": "u"})
        record.""",
        "user",
    ),
    # -- properties
    Case(
        "property_decorated",
        """
        class Circle:
            def __init__(self, r):
                self.r = r

            @property
            def area(self):
                return 3.14 * self.r**2


        circle = Circle(1)
        print(circle.""",
        "area",
    ),
    Case(
        "property_assigned",
        """
        class Temperature:
            def _get(self):
                return self._c

            def _set(self, value):
                self._c = value

            celsius = property(_get, _set)


        temperature = Temperature()
        temperature.""",
        "celsius",
    ),
    Case(
        "cached_property",
        """
        import functools


        class Report:
            @functools.cached_property
            def total(self):
                return 1


        report = Report()
        report.""",
        "total",
    ),
    Case(
        "property_added_in_a_loop",
        """
        class Model:
            pass


        for field_name in ("title", "body"):
            setattr(Model, field_name, property(lambda self, f=field_name: self._data[f]))

        post = Model()
        print(post.""",
        "title",
    ),
    # -- conditional definitions
    Case(
        "method_defined_in_an_if_at_class_level",
        """
        import sys


        class Reader:
            if sys.platform == "win32":
                def read_windows(self):
                    return 1
            else:
                def read_posix(self):
                    return 2


        reader = Reader()
        reader.""",
        "read_windows",
    ),
    Case(
        "attribute_defined_in_a_try_at_class_level",
        """
        class Codec:
            try:
                import zlib as backend
            except ImportError:
                backend = None


        Codec.""",
        "backend",
    ),
    Case(
        "module_function_defined_under_an_if",
        """
        import compat

        compat.""",
        "old_api",
        {
            "compat.py": """
            import sys

            if sys.version_info >= (3, 99):
                def new_api():
                    return 1
            else:
                def old_api():
                    return 2
            """
        },
    ),
    Case(
        "module_function_defined_in_an_except",
        """
        import compat

        compat.""",
        "parse",
        {
            "compat.py": """
            try:
                from json import loads as parse
            except ImportError:
                def parse(text):
                    return text
            """
        },
    ),
    Case(
        "module_globals_written",
        """
        import consts

        print(consts.""",
        "RED",
        {"consts.py": 'for _name in ("RED", "GREEN"):\n    globals()[_name] = _name.lower()\n'},
    ),
    Case(
        "module_global_set_in_a_function",
        """
        import state

        state.init()
        state.""",
        "CONNECTION",
        {"state.py": "def init():\n    global CONNECTION\n    CONNECTION = object()\n"},
    ),
    Case(
        "module_set_through_sys_modules",
        """
        import lazy

        lazy.""",
        "alpha",
        {
            "lazy.py": (
                "import sys\n\nfor _n in ('alpha', 'beta'):\n"
                "    setattr(sys.modules[__name__], _n, len(_n))\n"
            )
        },
    ),
    Case(
        "module_getattr",
        """
        import lazy

        lazy.""",
        "whatever",
        {"lazy.py": "def __getattr__(name):\n    return name\n"},
    ),
    # -- a stub beside the runtime module
    Case(
        "stub_lacks_a_module_function",
        """
        import fast

        fast.""",
        "turbo",
        {
            "fast.py": "def speed():\n    return 1\n\n\ndef turbo():\n    return 2\n",
            "fast.pyi": "def speed() -> int: ...\n",
        },
    ),
    Case(
        "stub_lacks_an_instance_attribute",
        """
        from shapes import Box

        box = Box()
        box.""",
        "depth",
        {
            "shapes.py": "class Box:\n    def __init__(self):\n        self.w = 1\n        self.depth = 2\n",
            "shapes.pyi": "class Box:\n    w: int\n",
        },
    ),
    # -- TYPE_CHECKING imports
    Case(
        "type_checking_import_in_an_annotation",
        """
        from __future__ import annotations

        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from models import User


        def greet(user: User) -> str:
            return user.""",
        "save",
        {"models.py": MODELS},
    ),
    Case(
        "type_checking_import_with_a_runtime_stand_in",
        """
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from models import User
        else:
            class User:
                def archive(self):
                    return None


        def store(user: "User"):
            return user.""",
        "archive",
        {"models.py": MODELS},
    ),
    # -- a local (or parameter) that shadows a name of an outer scope
    Case(
        "local_shadows_a_module_level_name",
        """
        import json


        class Config:
            def __init__(self):
                self.debug = False


        config = Config()
        config.debug = True


        def load(path):
            config = json.load(open(path))
            return config.""",
        "get",
    ),
    Case(
        "parameter_shadows_a_module_level_name",
        """
        class Client:
            def send(self, data):
                return data


        client = Client()
        client.send(b"")


        def handle(client):
            return client.""",
        "send_raw",
    ),
    Case(
        "loop_target_shadows_a_module_level_name",
        """
        class Row:
            def __init__(self):
                self.id = 0


        row = Row()
        row.id = 1


        def dump(rows):
            for row in rows:
                print(row.""",
        "keys",
    ),
    Case(
        "with_target_shadows_a_module_level_name",
        """
        class Handle:
            def close(self):
                pass


        handle = Handle()
        handle.close()


        def copy(opener):
            with opener() as handle:
                return handle.""",
        "read",
    ),
    Case(
        "class_level_name_is_not_a_method_s",
        """
        class Parser:
            def parse(self, text):
                return text


        class Tool:
            parser = Parser()
            parser.parse("")

            def run(self, parser):
                return parser.""",
        "add_argument",
    ),
    Case(
        "inner_function_parameter_shadows_the_outer_local",
        """
        class Node:
            def __init__(self):
                self.children = []


        def walk():
            node = Node()
            node.children

            def visit(node):
                return node.""",
        "tag",
    ),
    Case(
        "local_shadows_a_module_level_name_used_in_another_function",
        """
        class Cache:
            def clear(self):
                pass


        cache = Cache()


        def reset():
            cache.clear()


        def fill(make):
            cache = make()
            cache.""",
        "update",
    ),
    # -- dataclass, namedtuple, enum
    Case(
        "dataclass_field",
        """
        from dataclasses import dataclass, field


        @dataclass
        class Point:
            x: int
            tags: list = field(default_factory=list)


        p = Point(1)
        print(p.""",
        "tags",
    ),
    Case(
        "dataclass_fields_dunder",
        """
        from dataclasses import dataclass


        @dataclass
        class Point:
            x: int


        print(Point.""",
        "__dataclass_fields__",
    ),
    Case(
        "namedtuple_field",
        """
        from collections import namedtuple

        Pair = namedtuple("Pair", "left right")
        pair = Pair(1, 2)
        print(pair.""",
        "right",
    ),
    Case(
        "namedtuple_method",
        """
        from collections import namedtuple

        Pair = namedtuple("Pair", "left right")
        pair = Pair(1, 2)
        print(pair.""",
        "_asdict",
    ),
    Case(
        "typing_namedtuple",
        """
        from typing import NamedTuple


        class Address(NamedTuple):
            host: str
            port: int


        address = Address("h", 1)
        address.""",
        "_replace",
    ),
    Case(
        "enum_member_s_value",
        """
        import enum


        class Color(enum.Enum):
            RED = 1
            GREEN = 2


        print(Color.RED.""",
        "value",
    ),
    Case(
        "enum_member",
        """
        import enum


        class Color(enum.Enum):
            RED = 1
            GREEN = 2


        print(Color.""",
        "GREEN",
    ),
    Case(
        "enum_member_map",
        """
        import enum


        class Color(enum.Enum):
            RED = 1


        print(Color.""",
        "_member_map_",
    ),
    # -- inherited members from a base in another file
    Case(
        "inherited_method_from_another_file",
        """
        from base import Animal


        class Dog(Animal):
            def fetch(self):
                return 1


        dog = Dog()
        dog.""",
        "speak",
        {"base.py": "class Animal:\n    def speak(self):\n        return ''\n"},
    ),
    Case(
        "inherited_attribute_set_through_new_in_another_file",
        """
        from base import Quantity


        class Meters(Quantity):
            def show(self):
                return self.""",
        "_value",
        {
            "base.py": """
            class Quantity:
                def __new__(cls, value):
                    self = object.__new__(cls)
                    self._value = value
                    return self
            """
        },
    ),
    Case(
        "base_that_does_not_resolve",
        """
        from somewhere_missing import Base


        class Model(Base):
            def label(self):
                return "m"


        model = Model()
        model.""",
        "save",
    ),
    Case(
        "class_decorated_by_an_unknown_decorator",
        """
        from plugins import register


        @register
        class Job:
            def run(self):
                return 1


        Job.""",
        "plugin_id",
        {"plugins.py": "def register(cls):\n    cls.plugin_id = id(cls)\n    return cls\n"},
    ),
    # -- class attributes set in classmethods, attributes added in other methods
    Case(
        "class_attribute_set_in_a_classmethod",
        """
        class App:
            @classmethod
            def configure(cls, **options):
                cls.settings = options


        App.configure(debug=True)
        print(App.""",
        "settings",
    ),
    Case(
        "class_attribute_set_in_a_base_s_classmethod",
        """
        class Base:
            @classmethod
            def register(cls):
                cls.registered = True


        class Child(Base):
            pass


        Child.register()
        print(Child.""",
        "registered",
    ),
    Case(
        "class_attribute_set_through_type_of_self",
        """
        class Counter:
            def bump(self):
                type(self).count = getattr(type(self), "count", 0) + 1


        counter = Counter()
        counter.bump()
        print(counter.""",
        "count",
    ),
    Case(
        "attribute_added_in_another_method",
        """
        class Connection:
            def __init__(self, host):
                self.host = host

            def open(self):
                self.socket = object()


        conn = Connection("h")
        conn.open()
        conn.""",
        "socket",
    ),
    Case(
        "attribute_added_in_another_method_read_on_self",
        """
        class Job:
            def start(self):
                self.started = 1

            def elapsed(self):
                return self.""",
        "started",
    ),
]

# where the set is complete and simple: a name that does not exist is removed
MASKED = [
    Case(
        "a_member_in_a_call_s_list_over_lines_in_init",
        """
        class Converter:
            def __init__(self, registry):
                self.registry = registry
                self.registry.register(
                    [
                        (str, self._as_text),
                        (bytes, self.""",
        "_as_text",
        {},
    ),
    Case(
        "slotted_class_whose_setattr_names_only_slots",
        """
        class Address:
            __slots__ = ("host", "port")

            def __init__(self, *values):
                for name, value in zip(self.__slots__, values):
                    setattr(self, name, value)


        address = Address("h", 1)
        address.""",
        "port",
    ),
    Case(
        "a_class_that_writes_another_class_s_instance",
        """
        class Record:
            def __init__(self, msg):
                self.msg = msg


        class Logger:
            def make(self, msg, extra):
                rv = Record(msg)
                for key in extra:
                    rv.__dict__[key] = extra[key]
                return rv


        logger = Logger()
        logger.""",
        "make",
    ),
    Case(
        "a_class_restoring_its_state",
        """
        class Session:
            def __init__(self):
                self.trust_env = True

            def __setstate__(self, state):
                for attr, value in state.items():
                    setattr(self, attr, value)


        session = Session()
        session.""",
        "trust_env",
    ),
    Case(
        "a_class_that_copies_itself",
        """
        class Point:
            def __init__(self):
                self.x = 0

            def __copy__(self):
                new = object.__new__(type(self))
                new.__dict__.update(self.__dict__)
                return new


        point = Point()
        point.""",
        "x",
    ),
    Case(
        "a_module_that_reads_its_globals",
        """
        import registry

        registry.""",
        "lookup",
        {"registry.py": "def lookup(name):\n    return globals()[name]\n"},
    ),
    Case(
        "plain_class_two_methods",
        """
        class Widget:
            def draw(self):
                return 1

            def hide(self):
                return 2


        widget = Widget()
        widget.""",
        "draw",
    ),
    Case(
        "plain_class_s_self",
        """
        class Widget:
            def draw(self):
                return 1

            def hide(self):
                return self.""",
        "draw",
    ),
    Case(
        "plain_class_from_another_file",
        """
        from shapes import Square

        square = Square()
        square.""",
        "side",
        {"shapes.py": "class Square:\n    def __init__(self):\n        self.side = 1\n"},
    ),
    Case(
        "patched_class_keeps_its_mask",
        """
        class Plugin:
            def run(self):
                pass


        Plugin.registry = {}
        print(len(Plugin.""",
        "registry",
    ),
    Case(
        "module_level_name_read_in_a_function",
        """
        class Widget:
            def draw(self):
                return 1


        widget = Widget()


        def show():
            return widget.""",
        "draw",
    ),
    Case(
        "dataclass",
        """
        from dataclasses import dataclass


        @dataclass
        class Point:
            x: int
            y: int


        point = Point(1, 2)
        point.""",
        "y",
    ),
]


def analysed(tmp_path: Path, case: Case) -> tuple[Table, str]:
    """The case's workspace written under tmp_path, main.py analysed as the cut text."""
    for rel, text in case.files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(src(text))
    text = src(case.text)
    assert text.endswith("."), "a case's text ends right after `receiver.`"
    (tmp_path / "main.py").write_text(text)
    path = str(tmp_path / "main.py")
    table = Analyser().analyse(
        text, version=1, path=path, root=str(tmp_path), near_line=text.count("\n") + 1
    )
    return table, text


def monitor_over(table: Table, text: str, name: str) -> tuple[Monitor, list[bytes]]:
    """The decode loop's monitor at the cut, over a vocabulary that spells `name` whole and in
    pieces of three characters."""
    pieces = [name[i : i + 3].encode() for i in range(0, len(name), 3)]
    vocab = list(dict.fromkeys([name.encode(), *pieces, *ENDINGS, *OTHERS, *LETTERS]))
    monitor = Monitor(
        NameTokens(vocab),
        table,
        text=text,
        scope=table.scope_at(text),
        bias=table.incomplete_bias,
        syntax=table.syntax,
    )
    return monitor, vocab


def row(monitor: Monitor, vocab: list[bytes], out: list[int]) -> np.ndarray:
    return monitor.guide(np.zeros(len(vocab), dtype=np.float32), out)


def described(table: Table, text: str) -> str:
    receiver = text.rsplit("\n", 1)[-1].rstrip(".")
    receiver = receiver.rsplit("(", 1)[-1].split()[-1]
    found = table.lookup(table.scope_at(text), receiver)
    if found is None:
        return f"{receiver}: no entry"
    return f"{receiver}: complete={found.complete}, {sorted(found.names)[:40]}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_right_name_is_not_removed(tmp_path: Path, case: Case) -> None:
    table, text = analysed(tmp_path, case)
    monitor, vocab = monitor_over(table, text, case.name)
    why = described(table, text)
    whole = vocab.index(case.name.encode())
    assert np.isfinite(row(monitor, vocab, [])[whole]), f"{case.name} removed; {why}"
    out: list[int] = []
    for i in range(0, len(case.name), 3):
        token = vocab.index(case.name[i : i + 3].encode())
        assert np.isfinite(row(monitor, vocab, out)[token]), f"{case.name} cut at {i}; {why}"
        out.append(token)
    ends = row(monitor, vocab, out)
    assert any(np.isfinite(ends[vocab.index(t)]) for t in ENDINGS), f"{case.name} not ended; {why}"


@pytest.mark.parametrize("case", MASKED, ids=[c.id for c in MASKED])
def test_a_complete_simple_set_still_masks(tmp_path: Path, case: Case) -> None:
    table, text = analysed(tmp_path, case)
    monitor, vocab = monitor_over(table, text, case.name)
    guided = row(monitor, vocab, [])
    why = described(table, text)
    assert np.isfinite(guided[vocab.index(case.name.encode())]), why
    assert not np.isfinite(guided[vocab.index(DECOY.encode())]), f"{DECOY} kept; {why}"
    assert not np.isfinite(guided[vocab.index(b"zz")]), why


def test_a_lookup_stops_at_the_scope_that_binds_the_name() -> None:
    widget = Members(frozenset({"draw"}), True)
    table = Table(
        1,
        {((), "w"): widget, (("class Tool",), "p"): widget, (("class Tool",), "self"): widget},
        bound={("def f",): frozenset({"w"}), ("class Tool", "def run"): frozenset({"self"})},
    )
    assert table.lookup(("def f",), "w") is None  # (f's own `w`: not the module's)
    assert table.lookup(("def f",), "call w.draw") is None
    assert table.lookup(("def g",), "w") is widget  # (g reads the module's)
    assert table.lookup(("def f", "def inner"), "w") is None  # (the enclosing function's)
    assert table.lookup(("class Tool", "def run"), "p") is None  # (a class's name: not a method's)
    assert table.lookup(("class Tool",), "p") is widget
    assert table.lookup(("class Tool", "def run"), "self") is widget  # (keyed by the class)
    assert table.binds(("def f", "def inner"), "w") and not table.binds(("def g",), "w")


def test_a_function_s_local_is_not_the_module_s_name_of_that_text(tmp_path: Path) -> None:
    case = Case(
        "local",
        """
        class Widget:
            def draw(self):
                return 1


        widget = Widget()


        def show():
            widget.draw()


        def make(factory):
            widget = factory()
            widget.""",
        "anything",
    )
    table, text = analysed(tmp_path, case)
    assert table.bound[("def make",)] >= {"widget", "factory"}
    assert table.lookup(("def make",), "widget") is None
    module = table.lookup(("def other",), "widget")
    assert module is not None and module.complete and "draw" in module.names


def test_a_table_published_early_allows_what_is_assigned_on_receivers_not_analysed_yet(
    tmp_path: Path,
) -> None:
    # `config.verbose = True` far from the cursor: its receiver's type is not known when the
    # first tables are published (the receivers nearest the cursor first)
    text = src(
        """
        class Config:
            def __init__(self):
                self.name = "app"


        def configure(config: Config) -> None:
            config.verbose = True
        """
    )
    text += "".join(f"v{i} = 'a'\nv{i}.upper()\n" for i in range(12)) + "conf = Config()\nconf."
    (tmp_path / "main.py").write_text(text)
    published: list[Table] = []
    final = Analyser().analyse(
        text,
        version=1,
        path=str(tmp_path / "main.py"),
        root=str(tmp_path),
        near_line=text.count("\n") + 1,
        hooks=Hooks(publish=published.append),
    )
    early = [t.lookup((), "conf") for t in published]
    assert any(m is not None and m.complete for m in early)
    for members in [*early, final.lookup((), "conf")]:
        assert members is None or not members.complete or "verbose" in members.names
    plain = final.lookup((), "v0")
    assert plain is not None and "verbose" not in plain.names  # (known: a str, not a Config)


def test_a_dynamic_write_far_from_an_edit_still_counts(tmp_path: Path) -> None:
    helper = src(
        """
        class Config:
            def __init__(self):
                self.name = "app"


        def load(target, values):
            for key, value in values.items():
                setattr(target, key, value)


        cfg = Config()
        load(cfg, {})
        """
    )
    text = helper + "x = 1\n" * 60 + "cfg."
    path = str(tmp_path / "main.py")
    (tmp_path / "main.py").write_text(text)
    analyser = Analyser()
    first = analyser.analyse(text, version=1, path=path, root=str(tmp_path), near_line=1)
    edited = text + "name\ncfg."
    second = analyser.analyse(
        edited, version=2, path=path, root=str(tmp_path), near_line=edited.count("\n") + 1,
        earlier=first,
    )  # fmt: skip
    assert analyser._targets[path]  # (the write's type, kept for the next version)
    for table in (first, second):
        cfg = table.lookup((), "cfg")
        assert cfg is not None and not cfg.complete


def test_the_suite_is_wide_enough() -> None:
    assert len(CASES) >= 40 and len({c.id for c in CASES + MASKED}) == len(CASES + MASKED)
