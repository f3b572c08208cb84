"""A small inventory module: the demo completes the last method."""

from dataclasses import dataclass, field


@dataclass
class Item:
    name: str
    price: float
    quantity: int = 0


@dataclass
class Inventory:
    items: dict[str, Item] = field(default_factory=dict)

    def add(self, item: Item) -> None:
        if item.name in self.items:
            raise ValueError(f"item {item.name} already exists")
        self.items[item.name] = item

    def remove(self, name: str) -> Item:
        if name not in self.items:
            raise KeyError(f"item {name} does not exist")
        return self.items.pop(name)

    def restock(self, name: str, quantity: int) -> None:
        if name not in self.items:
            raise KeyError(f"item {name} does not exist")
        self.items[name].quantity += quantity

    def sell(self, name: str, quantity: int) -> None:
        
